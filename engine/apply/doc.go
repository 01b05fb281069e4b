// Package apply is the stage that makes the cluster match the rendered
// children: it server-side applies each child with one field manager, skips
// children whose live state already matches, and prunes children that no
// longer render.
//
// Data flows in as desired objects (from render) and live objects (from the
// controller's informer caches); it flows out as a ChangeSet, one Result per
// object, saying what was done (created, configured, unchanged, pruned or
// failed). Logs, conditions and metrics are derived from those values.
//
// Skipping unchanged children is what makes steady state silent. A child is
// left alone when its live object still carries the hash of the same desired
// object (the loom.dev/applied annotation) and the fields Loom sets still
// hold the values Loom last applied. Drift by another writer changes those
// values, so it is repaired by the next reconcile.
package apply
