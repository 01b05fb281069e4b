// Package roles reads, from the text of a set's templates, the rules its
// Roles and ClusterRoles write and the roles its RoleBindings and
// ClusterRoleBindings refer to.
//
// Data flows one way: Scan reads template sources (never renders them)
// and returns what it found with the file and line of each. engine/rbac
// turns the rules into what Loom must hold (the API server lets Loom write
// a role only with rules it holds itself) and the literal roleRefs into
// bind permissions scoped by name; engine/render checks each rendered
// binding's roleRef and each rendered role's rules against them. It
// imports neither, so both can use it.
package roles
