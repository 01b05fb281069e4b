// Package hookrun runs a chart's hooks once per release revision
// (engine/hook): the decisions are hook.Decide's; a Run reads what they
// need (the parent's status.release, each hook's live object), acts on
// them, and gives the Record the status write keeps.
//
// The parent controller drives one Run per reconcile of a chart's parent,
// through the steps of its reconcile, and lends it the cluster (Cluster):
//
//	begin ──► WithRecord (status.release Loom last wrote)
//	plan  ──► Start (the stored Record, moved to the release's revision)
//	apply ──► Gate (hooks to create; older runs deleted) ─► Applied
//	report ─► Release (status.release), Changed (reconcile again)
//
// Prune leaves a hook's run alone (IsRun): its delete policy, its next
// run or the parent's deletion removes it.
package hookrun
