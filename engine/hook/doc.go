// Package hook decides how a chart's hooks run under Loom, as Helm runs
// them on an install or an upgrade: which release revision a parent is
// at, and, for each hook of that revision, whether Loom creates it,
// waits for it, deletes it (Helm's delete policies) or leaves it alone.
//
// Data flows one way. A parent's status.release (a Record, which Loom
// writes) and the digest of what it renders (the chart and the values)
// give the release (Next): a new revision when the digest changed, the
// same one otherwise, so a chart edit is an upgrade as much as a values
// edit is. Render reads the release (.Release.Revision, .IsInstall,
// .IsUpgrade), keeps the hooks of its event, and stamps each with
// AnnotationRevision. The controller then calls Decide for each hook
// with what the Record says of it and what the cluster holds, acts on
// the Decision, and writes the Record back with the hook's new Phase.
//
// Each hook runs once per revision: once the Record says a hook ran in
// a revision, Loom never creates it again in that revision, even when
// its object is gone (a Job that the TTL controller deleted, or one a
// delete policy removed). Nothing here talks to a cluster.
//
// What an object's hook annotations say is read here too, by Helm 4's own
// parser (SpecOf, helmhook.go): the Stage at which Loom applies a chart's
// object (before the other children, after them, or never) and its
// weight and delete policies. NeverAppliedFile (scan.go) tells from a
// chart template's text alone that every document in it is a hook Loom
// never applies, so that render need not execute the file.
package hook
