// Package depend decides, from what a render read, which children wait for
// others: the dependency stage between render and apply.
//
// Render records the lookups each document made (render.Output.Reads).
// A document that looked up another child this parent renders depends on
// it: it is applied only once that child exists and is ready by Loom's
// readiness rules (kstatus plus loom.yaml's overrides), judged on the very
// object the lookup returned. Until then it waits: it is not applied, and
// an object already there from an earlier render is kept, not pruned. A
// document that looks itself up (to keep a value it generated once, as
// Helm charts do) does not wait for itself.
//
// Two or more documents that look each other up form a cycle: they can
// never all be created, so the parent is Degraded and the cycle is named.
//
// A template file that failed after looking up a child this parent renders
// (say, a `required` on a field the API server fills in) waits when one of
// those children is not ready yet; once they all are, its error is real.
// While such a file waits its children are unknown, so nothing of the
// parent may be pruned.
//
// Decide is pure: it reads nothing but its arguments.
package depend
