package controller

// A chart's hooks, run once per release revision (engine/hook): the
// decisions are hook.Decide's; this file reads what they need (the
// parent's status.release, each hook's live object), acts on them, and
// gives the Record the status write keeps.

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/hook"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// withRecord is parent with the status.release Loom last wrote to it,
// when the cache has not caught up with that write: a render reads its
// release from there, and a stale one would run a done hook again.
func (c *Controller) withRecord(parent *unstructured.Unstructured) *unstructured.Unstructured {
	prev := c.status.Previous(parent)
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

// hookRun is what one reconcile does with a chart's hooks.
type hookRun struct {
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

// startHooks begins the hooks' run of a reconcile of parent rendered as
// out (nil for a set that is not a chart).
func startHooks(parent *unstructured.Unstructured, out *render.Output) (*hookRun, error) {
	if out.Release == nil {
		return nil, nil
	}
	st, _ := parent.Object["status"].(map[string]any)
	stored, err := hook.RecordOf(st)
	if err != nil {
		return nil, err
	}
	stored = hook.Start(stored, *out.Release)
	return &hookRun{rec: stored, stored: stored, created: map[object.Ref]hook.Key{}, done: map[object.Ref]bool{}}, nil
}

// gate decides each hook among apply (hook.Decide) and returns the
// children to apply now: a hook only when it is to be created; a hook to
// delete (an older run, before-hook-creation; this run, by its delete
// policy) is deleted here. left holds the live objects of the hooks left
// as they are, which the status judges. Only an object that is parent's
// child (object.IsChildOf) is a run of its hook: another parent's object
// of the same name is neither deleted nor taken for this parent's run,
// and the hook is applied, which the API server refuses as another's.
func (c *Controller) gate(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, run *hookRun, out *render.Output, apply []*unstructured.Unstructured, fresh map[object.Ref]*unstructured.Unstructured) (keep []*unstructured.Unstructured, deleted object.ChangeSet, left map[object.Ref]*unstructured.Unstructured) {
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
		live := c.sh.Cache.Get(c.groupResource(h.Ref), h.Ref.Namespace, h.Ref.Name)
		if live != nil && !object.IsChildOf(live, parent) {
			continue
		}
		stored := run.stored.Phase(h.Key)
		if d := hook.Decide(rev, stored, h.Policies, hookState(live, set)); d.Action == hook.Delete {
			logger.V(4).Info("Hook decided", "hook", h.Ref.String(), "revision", rev, "action", d.Action.String(), "phase", d.Phase)
			deleted = append(deleted, c.applier(ctx).Prune(ctx, []*unstructured.Unstructured{live})...)
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
		live := c.hookLive(ctx, child, fresh, stored)
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
			deleted = append(deleted, c.applier(ctx).Prune(ctx, []*unstructured.Unstructured{live})...)
		default:
			run.rec = run.rec.With(h.Key, d.Phase)
			if live != nil {
				left[ref] = live
			}
		}
	}
	return keep, deleted, left
}

// applied records the hooks whose create succeeded as Running.
func (run *hookRun) applied(results object.ChangeSet) {
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

// changed reports whether the Record moved since the reconcile began: the
// next render may drop a hook that is done, and let what waited for it go.
func (run *hookRun) changed() bool {
	return run != nil && fmt.Sprint(run.rec) != fmt.Sprint(run.stored)
}

// hookLive is the hook's live object: this reconcile's apply, or the
// cache; for a hook recorded Running that the cache does not hold, the
// API server's answer, since a hook gone after it ran is done and a
// cache behind Loom's create must not say so.
func (c *Controller) hookLive(ctx context.Context, child *unstructured.Unstructured, fresh map[object.Ref]*unstructured.Unstructured, stored hook.Phase) *unstructured.Unstructured {
	ref := object.RefOf(child)
	if l := fresh[ref]; l != nil {
		return l
	}
	if l := c.sh.Cache.Get(c.groupResource(ref), ref.Namespace, ref.Name); l != nil {
		return l
	}
	if stored != hook.Running {
		return nil
	}
	gvr, _, err := c.sh.Applier.Resource(child.GroupVersionKind())
	if err != nil {
		return child // unknown: taken as there, so that it is not called gone
	}
	l, err := c.sh.Client.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
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
