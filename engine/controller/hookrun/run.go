package hookrun

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/hook"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// Cluster is what a Run needs of the parent controller: its child cache,
// the API server for a hook the cache does not hold, and the deletes of
// the reconcile's identity. It is the seam between a chart's hooks and
// the controller, which implements it.
type Cluster interface {
	// Cached returns ref's object as the child cache holds it, or nil.
	Cached(ref object.Ref) *unstructured.Unstructured
	// Resource resolves a kind to the resource the cluster serves it as.
	Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error)
	// Get reads one object from the API server.
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	// Prune deletes objs, as the reconcile that ctx belongs to acts.
	Prune(ctx context.Context, objs []*unstructured.Unstructured) object.ChangeSet
}

// WithRecord is parent with the status.release Loom last wrote to it
// (prev is parent with the newest status Loom knows of), when the cache
// has not caught up with that write: a render reads its release from
// there, and a stale one would run a done hook again.
func WithRecord(parent, prev *unstructured.Unstructured) *unstructured.Unstructured {
	rec, ok, _ := unstructured.NestedFieldNoCopy(prev.Object, "status", hook.StatusField)
	cur, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status", hook.StatusField)
	if !ok || equality.Semantic.DeepEqual(rec, cur) {
		return parent
	}
	p := parent.DeepCopy()
	st, _ := p.Object["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		p.Object["status"] = st
	}
	st[hook.StatusField] = rec
	return p
}

// Run is what one reconcile does with a chart's hooks.
type Run struct {
	// rec is the Record the status write keeps.
	rec hook.Record
	// stored is the Record the reconcile started from.
	stored hook.Record
	// created are the hooks applied, by object: their phase is Running
	// once the apply succeeds.
	created map[object.Ref]hook.Key
	// done are the hooks done in this revision already followed (a
	// reconcile gates each render pass).
	done map[object.Ref]bool
}

// Start begins the hooks' run of a reconcile of parent rendered as out
// (nil for a set that is not a chart).
func Start(parent *unstructured.Unstructured, out *render.Output) (*Run, error) {
	if out.Release == nil {
		return nil, nil
	}
	st, _ := parent.Object["status"].(map[string]any)
	stored, err := hook.RecordOf(st)
	if err != nil {
		return nil, err
	}
	stored = hook.Start(stored, *out.Release)
	return &Run{rec: stored, stored: stored, created: map[object.Ref]hook.Key{}, done: map[object.Ref]bool{}}, nil
}

// Gate decides each hook among apply (hook.Decide) and returns the
// children to apply now: a hook only when it is to be created; a hook to
// delete (an older run, before-hook-creation; this run, by its delete
// policy) is deleted here. left holds the live objects of the hooks left
// as they are, which the status judges. Only an object that is parent's
// child (object.IsChildOf) is a run of its hook: another parent's object
// of the same name is neither deleted nor taken for this parent's run,
// and the hook is applied, which the API server refuses as another's.
func (run *Run) Gate(ctx context.Context, cl Cluster, set *render.Set, parent *unstructured.Unstructured, out *render.Output, apply []*unstructured.Unstructured, fresh map[object.Ref]*unstructured.Unstructured) (keep []*unstructured.Unstructured, deleted object.ChangeSet, left map[object.Ref]*unstructured.Unstructured) {
	if run == nil || len(out.Hooks) == 0 {
		return apply, nil, nil
	}
	hooks := make(map[object.Ref]render.Hook, len(out.Hooks))
	rev := strconv.FormatInt(out.Release.Revision, 10)
	logger := klog.FromContext(ctx)
	for _, h := range out.Hooks {
		if !h.Done {
			hooks[h.Ref] = h
			continue
		}
		// A hook done in this revision is no child: only its delete
		// policy may still have something to do.
		if run.done[h.Ref] {
			continue
		}
		run.done[h.Ref] = true
		live := cl.Cached(h.Ref)
		if live != nil && !object.IsChildOf(live, parent) {
			continue
		}
		stored := run.stored.Phase(h.Key)
		if d := hook.Decide(rev, stored, h.Policies, hookState(live, set)); d.Action == hook.Delete {
			logger.V(4).Info("Hook decided", "hook", h.Ref.String(), "revision", rev, "action", d.Action.String(), "phase", d.Phase)
			deleted = append(deleted, cl.Prune(ctx, []*unstructured.Unstructured{live})...)
		}
	}
	keep = apply[:0:0]
	left = map[object.Ref]*unstructured.Unstructured{}
	for _, child := range apply {
		ref := object.RefOf(child)
		h, ok := hooks[ref]
		if !ok {
			keep = append(keep, child)
			continue
		}
		stored := run.stored.Phase(h.Key)
		live := hookLive(ctx, cl, child, fresh, stored)
		if live != nil && !object.IsChildOf(live, parent) {
			keep = append(keep, child) // refused by the API server, as another's
			continue
		}
		d := hook.Decide(rev, stored, h.Policies, hookState(live, set))
		logger.V(4).Info("Hook decided", "hook", ref.String(), "revision", rev, "action", d.Action.String(), "phase", d.Phase)
		switch d.Action {
		case hook.Apply:
			run.created[ref] = h.Key
			keep = append(keep, child)
		case hook.Delete:
			run.rec = run.rec.With(h.Key, d.Phase)
			deleted = append(deleted, cl.Prune(ctx, []*unstructured.Unstructured{live})...)
		default:
			run.rec = run.rec.With(h.Key, d.Phase)
			if live != nil {
				left[ref] = live
			}
		}
	}
	return keep, deleted, left
}

// Applied records the hooks whose create succeeded as Running.
func (run *Run) Applied(results object.ChangeSet) {
	if run == nil {
		return
	}
	for _, r := range results {
		if k, ok := run.created[r.Ref]; ok && r.Action != object.Failed && r.Err == nil {
			if run.rec.Phase(k) == "" {
				run.rec = run.rec.With(k, hook.Running)
			}
		}
	}
}

// Changed reports whether the Record moved since the reconcile began: the
// next render may drop a hook that is done, and let what waited for it go.
func (run *Run) Changed() bool {
	return run != nil && fmt.Sprint(run.rec) != fmt.Sprint(run.stored)
}

// Release is the Record the status write keeps, as status.release.
func (run *Run) Release() map[string]any { return run.rec.Map() }

// IsRun reports whether child is a hook's run: it is not pruned when it
// no longer renders (it is done, or of another event).
func IsRun(child *unstructured.Unstructured) bool {
	return child.GetAnnotations()[hook.AnnotationRevision] != ""
}

// hookLive is the hook's live object: this reconcile's apply, or the
// cache; for a hook recorded Running that the cache does not hold, the
// API server's answer, since a hook gone after it ran is done and a
// cache behind Loom's create must not say so.
func hookLive(ctx context.Context, cl Cluster, child *unstructured.Unstructured, fresh map[object.Ref]*unstructured.Unstructured, stored hook.Phase) *unstructured.Unstructured {
	ref := object.RefOf(child)
	if l := fresh[ref]; l != nil {
		return l
	}
	if l := cl.Cached(ref); l != nil {
		return l
	}
	if stored != hook.Running {
		return nil
	}
	gvr, _, err := cl.Resource(child.GroupVersionKind())
	if err != nil {
		return child // unknown: taken as there, so that it is not called gone
	}
	l, err := cl.Get(ctx, gvr, ref.Namespace, ref.Name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return child
	}
	return l
}

// hookState is what hook.Decide needs of a hook's live object.
func hookState(live *unstructured.Unstructured, set *render.Set) hook.Live {
	if live == nil {
		return hook.Live{}
	}
	st := status.ChildStatus(live, set.Config.Readiness)
	return hook.Live{
		Exists:      true,
		Terminating: live.GetDeletionTimestamp() != nil,
		Revision:    live.GetAnnotations()[hook.AnnotationRevision],
		Ready:       st.Ready,
		Failed:      st.Status == "Failed",
	}
}
