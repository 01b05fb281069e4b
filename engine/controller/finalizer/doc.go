// Package finalizer holds the deletion path of Loom's parents: the two
// finalizers a parent carries while some of its children need Loom when
// it is deleted, and what Loom does then.
//
//   - loom.dev/orphan guards the children to keep (delete-policy orphan,
//     orphan.go): when the parent is deleted, Loom releases them, so that
//     they outlive it, and only then removes the finalizer.
//   - loom.dev/cluster-children guards the cluster-scoped children of a
//     namespaced parent (clusterchildren.go), which the garbage collector
//     cannot delete with it: Loom deletes them, and removes the finalizer
//     once none is left.
//
// Both are one guard type (guard.go): a finalizer, with an annotation
// listing the group-kinds of the children it guards, put on the parent
// before the first such child is applied and removed once a fresh list
// finds none. Loom lists only the kinds of those lists that the parent's
// set declares (guardkinds.go).
//
// A parent controller builds one Guards for its kind and calls it at
// three points of a reconcile:
//
//	render ─► Protect ─► apply (Holds: what waits for a finalizer) ─► prune ─► Settle
//	parent deleted ─► Finalize (pending: deleted just now, look again)
//
// Guards reach children only through what the controller hands them: the
// cached children of a parent (Owned), the parent's set, and the applier
// of the reconcile (Applier), which acts as the set's ServiceAccount when
// it has one.
package finalizer
