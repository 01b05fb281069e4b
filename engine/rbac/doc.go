// Package rbac derives the least-privilege RBAC rules Loom needs from what
// its template sets declare and render.
//
// Data flows one way: a loaded render.Set is reduced to a Set (the kinds
// its templates name at the top level of a document, found by kinds.ScanKinds (engine/render/kinds),
// and what its loom.yaml declares), and Generate turns the sets and the
// flags Loom runs with (Options) into a Policy: the rules of a ClusterRole
// and, for a Loom that watches one namespace, of Roles per namespace.
// For a set that renders RBAC kinds, the subpackage roles reads the rules
// its roles write and the roles its bindings name: Loom holds those rules
// and bind on those roles by name, never escalate (grants.go).
// Nothing here talks to a cluster; `loom rbac` prints a Policy and the
// controller checks its own permissions against one.
package rbac
