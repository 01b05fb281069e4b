// Package rollout decides how a template set's new revision reaches its
// parents: in health-gated steps, with a soak between them, and with a
// rollback or a pause when a step fails.
//
// Everything here is pure. The controller hands Decide the set's policy
// (loom.yaml's rollout block), the rollout's State as it was last written
// to the set's TemplateSet object, the revision the folder holds now, the
// user's controls (pause, resume, promote, abort) and a view of every
// parent; Decide returns the next State and the Events to record. Target
// then says, for one parent, which revision its children are rendered
// from.
//
// Which parents a step moves is decided by a threshold on a key derived
// from each parent's UID (canary-labelled parents first), fixed when the
// step starts and never lowered while the candidate lasts. A parent, once
// moved, therefore stays moved: a parent created or deleted mid-rollout
// never pushes another back, and the decision needs no per-parent record
// beyond the State, so a restarted Loom resumes at the same point.
package rollout
