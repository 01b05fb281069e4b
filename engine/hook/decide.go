package hook

import (
	"slices"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// Live is what the cluster holds of a hook's object. A caller that reads
// it from a cache, which may lag behind Loom's own create, confirms with
// the API server that a hook recorded Running is gone before it says so:
// a gone hook is done.
type Live struct {
	// Exists is true when the object is there (and not being deleted).
	Exists bool
	// Terminating is true when it is being deleted.
	Terminating bool
	// Revision is its AnnotationRevision ("" when it has none).
	Revision string
	// Ready and Failed are its readiness (a Job: Complete, Failed).
	Ready, Failed bool
}

// Action is what Loom does with a hook's object.
type Action int

const (
	// Leave does nothing: the hook waits, is done, or is someone else's.
	Leave Action = iota
	// Apply creates the hook (or applies it over an older run that its
	// policies do not delete first).
	Apply
	// Delete deletes the object: an older run, before the hook is created
	// again (before-hook-creation), or this revision's run, once the
	// Record holds its outcome (hook-succeeded, hook-failed).
	Delete
)

func (a Action) String() string {
	return [...]string{"Leave", "Apply", "Delete"}[a]
}

// Decision is what to do with one hook, and its phase in the Record
// this reconcile writes ("" for none yet).
type Decision struct {
	Action Action
	Phase  Phase
}

// Decide is what Loom does with a hook of revision rev whose run the
// parent's Record says is recorded (stored), under Helm's delete
// policies (Policies), given its object live:
//
//   - A hook not recorded is created: after its older run is deleted and
//     gone, when before-hook-creation is a policy; over it otherwise. One
//     of this revision's (the Record lags behind) is taken as recorded.
//   - A recorded hook is never created again in this revision. Its object
//     gone, it is Deleted (done) unless its outcome was recorded; there,
//     it is Running until it is ready (Succeeded) or failed (Failed).
//   - Its object is deleted for hook-succeeded or hook-failed only once
//     the stored Record holds that outcome: the outcome survives a
//     restart, and the hook is not run again.
func Decide(rev string, stored Phase, policies []helmrelease.HookDeletePolicy, live Live) Decision {
	policies = Policies(policies)
	if live.Terminating {
		return Decision{Leave, stored} // wait until it is gone
	}
	if !stored.Ran() {
		switch {
		case !live.Exists:
			return Decision{Apply, Running}
		case live.Revision != rev && slices.Contains(policies, helmrelease.HookBeforeHookCreation):
			return Decision{Delete, ""}
		case live.Revision != rev:
			return Decision{Apply, Running}
		}
		stored = Running // this revision's run, not recorded yet
	}
	switch {
	case !live.Exists:
		if stored == Running {
			return Decision{Leave, Deleted}
		}
		return Decision{Leave, stored}
	case live.Revision != rev:
		return Decision{Leave, stored} // replaced by someone else: not Loom's run
	case live.Ready:
		if stored == Succeeded && slices.Contains(policies, helmrelease.HookSucceeded) {
			return Decision{Delete, Succeeded}
		}
		return Decision{Leave, Succeeded}
	case live.Failed:
		if stored == Failed && slices.Contains(policies, helmrelease.HookFailed) {
			return Decision{Delete, Failed}
		}
		return Decision{Leave, Failed}
	}
	return Decision{Leave, Running}
}
