package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/rollout"
)

// sync makes one decision and carries it out, in an order that a crash at
// any point leaves recoverable: the candidate's files are kept before the
// state names them, the state is written before parents move, and old
// revisions are deleted last.
func (r *Rollout) sync(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("templateSet", r.name)
	folder := r.host.Folder()
	rev := folder.Revision()
	// A sharded replica decides only while it holds the set's bucket, and
	// then over every parent; the others follow the TemplateSet.
	sharded := r.host.Sharded()
	if sharded {
		wctx, leave, ok := r.host.EnterShard(ctx, r.deciderUID())
		if !ok {
			return r.follow(ctx, folder)
		}
		defer leave()
		ctx = wctx
	}

	// 1. Read the TemplateSet (create it the first time) and the state
	//    and controls it holds.
	ts, err := r.templateSet(ctx, folder)
	if err != nil {
		return err
	}
	prev, controls, err := rollout.FromObject(ts)
	if err != nil {
		return err
	}
	if v := r.view.Load(); v != nil && prev.StableRevision == "" {
		// The cluster lost the state while Loom ran: the TemplateSet was
		// deleted (its revisions with it) or its status cleared. Carry
		// on from the state in memory and keep the revisions again;
		// starting afresh would make the folder's candidate stable for
		// every parent at once.
		prev = v.state
		r.stored, r.pruned, r.last, r.behind = map[string]bool{}, "", nil, nil
	}

	// 2. Decide.
	in := rollout.Input{Policy: folder.Config.Rollout, Revision: rev, State: prev, Controls: controls, Now: r.cfg.Clock.Now()}
	var objs map[string]*unstructured.Unstructured
	switch {
	case sharded:
		// Every replica's parents decide; this one's are enqueued when
		// their revision moves (the others', by their replicas).
		if in.Parents, err = r.allParents(ctx); err != nil {
			return err
		}
		_, objs = r.parents()
	case folder.Config.Rollout != nil || prev.CandidateRevision != "":
		in.Parents, objs = r.parents()
	default:
		// Without a rollout, only the count of parents is shown: no
		// parent is decoded.
		in.Count = r.host.CountParents()
	}
	if err := r.ensureStable(ctx, &in); err != nil {
		return err
	}
	d := rollout.Decide(in)
	r.after = d.After

	// 3. Keep the files of every revision the state names, then the state.
	sets, err := r.load(ctx, folder, d.State, true)
	if err != nil {
		return err
	}
	if err := r.writeState(ctx, ts, folder, d.State); err != nil {
		return err
	}
	for _, e := range d.Events {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		r.cfg.Recorder.Event(ts, typ, e.Reason, e.Message)
		if e.Reason == "RolloutFailed" {
			if p := objs[d.State.FailedParent]; p != nil {
				r.cfg.Recorder.Event(p, corev1.EventTypeWarning, e.Reason, e.Message)
			}
		}
		logger.Info("Rollout", "reason", e.Reason, "message", e.Message)
	}
	for _, o := range rolloutFailureOutcomes(d) {
		r.cfg.Metrics.Failures.WithLabelValues(r.name, o).Inc()
	}

	// 4. Publish the view, and reconcile the parents whose revision moved.
	old := r.view.Swap(&rolloutView{state: d.State, sets: sets})
	for _, p := range objs {
		k := rollout.Key(string(p.GetUID()), IsCanary(p))
		if old == nil || old.state.TargetOf(k) != d.State.TargetOf(k) {
			r.host.Enqueue(cache.NewObjectName(p.GetNamespace(), p.GetName()))
		}
	}
	r.metrics(d.State)

	// 5. Forget revisions the state no longer names.
	return r.prune(ctx, d.State)
}

// templateSet returns this set's TemplateSet, created if missing: Loom's
// last write of it while the cache has not caught up with that write (see
// behind), the cached one otherwise.
func (r *Rollout) templateSet(ctx context.Context, folder *render.Set) (*unstructured.Unstructured, error) {
	if obj, ok, _ := r.informer.GetStore().GetByKey(r.name); ok {
		cached := obj.(*unstructured.Unstructured)
		if err := sameSet(cached, folder); err != nil {
			return nil, err
		}
		if r.last != nil && r.last.GetUID() == cached.GetUID() && slices.Contains(r.behind, cached.GetResourceVersion()) {
			return r.last.DeepCopy(), nil
		}
		r.last, r.behind = nil, nil
		return cached.DeepCopy(), nil
	}
	r.last, r.behind = nil, nil
	// Created, or, when another Loom made it first, read: either way it
	// may be another set's.
	ts, err := r.store.createSet(ctx, folder.Dir)
	if err != nil {
		return nil, err
	}
	if err := sameSet(ts, folder); err != nil {
		return nil, err
	}
	return ts, nil
}

// ensureStable handles a stable revision whose files are gone (someone
// deleted its TemplateRevision) or no longer load (kept by an older Loom
// that allowed what this one refuses, such as now): the folder's revision
// becomes stable, as on a first start, and an error log says so. Parents
// could not render the stable revision any more, and the decision would
// fail until the revision went: a fixed folder would never roll out.
func (r *Rollout) ensureStable(ctx context.Context, in *rollout.Input) error {
	s := in.State.StableRevision
	if s == "" || s == in.Revision || r.stored[s] {
		return nil
	}
	if v := r.view.Load(); v != nil && v.sets[s] != nil {
		return nil
	}
	obj, err := r.store.revision(ctx, s)
	switch {
	case err == nil:
		_, lerr := loadRevision(r.host.Folder().Dir, obj)
		if lerr == nil {
			return nil
		}
		klog.FromContext(ctx).Error(lerr, "The stable revision no longer loads; the folder's revision becomes stable",
			"templateSet", r.name, "stable", s, "folder", in.Revision)
	case apierrors.IsNotFound(err):
		klog.FromContext(ctx).Error(nil, "The stable revision's files are gone; the folder's revision becomes stable",
			"templateSet", r.name, "stable", s, "folder", in.Revision)
	default:
		return err
	}
	in.State = rollout.State{}
	return nil
}

// loadRevision loads the set whose files a TemplateRevision keeps. One
// that does not read as a TemplateRevision does not load.
func loadRevision(dir string, obj *unstructured.Unstructured) (*render.Set, error) {
	tr, err := v1alpha1.TemplateRevisionFromUnstructured(obj)
	if err != nil {
		return nil, err
	}
	raw := make(map[string][]byte, len(tr.Files))
	for n, f := range tr.Files {
		raw[n] = []byte(f)
	}
	return render.LoadSources(dir, raw)
}

// load returns the loaded set of each revision s names, keeping the
// folder's in the cluster first if s names it.
func (r *Rollout) load(ctx context.Context, folder *render.Set, s rollout.State, write bool) (map[string]*render.Set, error) {
	sets := map[string]*render.Set{}
	old := r.view.Load()
	for _, rev := range []string{s.StableRevision, s.CandidateRevision} {
		if rev == "" || sets[rev] != nil {
			continue
		}
		var have *render.Set
		switch {
		case rev == folder.Revision():
			have = folder
		case old != nil && old.sets[rev] != nil:
			have = old.sets[rev]
		}
		if have != nil {
			if !write {
				sets[rev] = have
				continue
			}
			if err := r.keep(ctx, have, rev); err != nil {
				return nil, err
			}
			sets[rev] = have
			continue
		}
		obj, err := r.store.revision(ctx, rev)
		if err != nil {
			return nil, err
		}
		set, err := loadRevision(folder.Dir, obj)
		if err != nil {
			return nil, fmt.Errorf("load TemplateRevision %s: %w", r.store.revisionName(rev), err)
		}
		r.stored[rev] = true
		sets[rev] = set
	}
	return sets, nil
}

// keep keeps the files of set, revision rev, in a TemplateRevision owned
// by the TemplateSet.
func (r *Rollout) keep(ctx context.Context, set *render.Set, rev string) error {
	if r.stored[rev] {
		return nil
	}
	var owner *unstructured.Unstructured
	if ts, ok, _ := r.informer.GetStore().GetByKey(r.name); ok {
		owner = ts.(*unstructured.Unstructured)
	}
	if err := r.store.keep(ctx, set, rev, owner); err != nil {
		return err
	}
	r.stored[rev] = true
	return nil
}

// writeState writes s to the TemplateSet's status when it changed. The
// write carries the resourceVersion it read, so a stale decision (another
// Loom's, or one raced by a user's edit) fails and is made again.
func (r *Rollout) writeState(ctx context.Context, ts *unstructured.Unstructured, folder *render.Set, s rollout.State) error {
	old, _ := ts.Object["status"].(map[string]any)
	var extra []metav1.Condition
	if cond := r.schema.Load(); cond != nil {
		extra = append(extra, *cond)
	}
	st, err := templateSetStatus(old, ts.GetGeneration(), folder, s, extra...)
	if err != nil {
		return fmt.Errorf("write the status of TemplateSet %s: %w", r.name, err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if oldJSON, err := json.Marshal(old); err == nil && string(oldJSON) == string(b) {
		return nil
	}
	r.remember(string(b))
	ts.Object["status"] = st
	written, err := r.store.writeStatus(ctx, ts)
	if err != nil {
		if apierrors.IsConflict(err) {
			r.last, r.behind = nil, nil // the next decision reads the cache
		}
		return err
	}
	r.last, r.behind = written, append(r.behind, ts.GetResourceVersion())
	return nil
}

// templateSetStatus is the status of a TemplateSet at generation gen
// whose status was old, once it holds s: old's conditions, updated by
// the ones s implies and by extra (an unreadable list is replaced).
func templateSetStatus(old map[string]any, gen int64, folder *render.Set, s rollout.State, extra ...metav1.Condition) (map[string]any, error) {
	st := statusOf(s)
	st.Set = folder.Dir
	st.ParentKind = folder.ParentGVK().GroupVersion().String() + "/" + folder.ParentGVK().Kind
	if list, ok := old["conditions"].([]any); ok {
		var prev v1alpha1.TemplateSetStatus
		if runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"conditions": list}, &prev) == nil {
			st.Conditions = prev.Conditions
		}
	}
	for _, cond := range append(rollout.Conditions(s), extra...) {
		cond.ObservedGeneration = gen
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
}

// statusOf is a TemplateSet's status holding s, and nothing else yet.
func statusOf(s rollout.State) v1alpha1.TemplateSetStatus {
	return v1alpha1.TemplateSetStatus{RolloutState: v1alpha1.RolloutState(s)}
}

// prune deletes this set's TemplateRevisions that s does not name. It
// lists them only when the revisions s names changed.
func (r *Rollout) prune(ctx context.Context, s rollout.State) error {
	keep := s.StableRevision + "/" + s.CandidateRevision
	if keep == r.pruned {
		return nil
	}
	items, err := r.store.listRevisions(ctx)
	if err != nil {
		return err
	}
	for _, item := range items {
		// One that does not read as a TemplateRevision names no revision:
		// it goes with the others.
		var rev string
		if tr, err := v1alpha1.TemplateRevisionFromUnstructured(&item); err == nil {
			rev = tr.Revision
		}
		if rev == s.StableRevision || rev == s.CandidateRevision {
			continue
		}
		if err := r.store.deleteRevision(ctx, &item); err != nil {
			return err
		}
		delete(r.stored, rev)
	}
	r.pruned = keep
	return nil
}

// metrics publishes the rollout's step and parents per revision.
func (r *Rollout) metrics(s rollout.State) {
	m := r.cfg.Metrics
	m.Step.WithLabelValues(r.name).Set(float64(s.Step))
	m.Parents.WithLabelValues(r.name, "candidate").Set(float64(s.Parents.Moved))
	m.Parents.WithLabelValues(r.name, "stable").Set(float64(s.Parents.Total - s.Parents.Moved))
}

// rolloutFailureOutcomes returns what each step that d failed turned into:
// outcomePaused when the policy's onFailure kept the candidate (the phase
// is Failed), outcomeRolledBack when it withdrew it. A decision fails at
// most one step; an abort is a user's choice, not a failure.
func rolloutFailureOutcomes(d rollout.Decision) []string {
	var out []string
	for _, e := range d.Events {
		if e.Reason != "RolloutFailed" {
			continue
		}
		if d.State.Phase == rollout.Failed {
			out = append(out, outcomePaused)
		} else {
			out = append(out, outcomeRolledBack)
		}
	}
	return out
}

// sameSet refuses a TemplateSet that another set's Loom keeps: one whose
// status names parents of another kind. TemplateSets are named by their
// set's folder, so two sets in folders of the same name (say, two teams'
// "app") would otherwise share one rollout, and each Loom would take the
// other's revision for a new candidate and prune the other's revisions.
// The parents' version may change; their group and kind may not.
func sameSet(ts *unstructured.Unstructured, folder *render.Set) error {
	theirs, _, _ := unstructured.NestedString(ts.Object, "status", "parentKind")
	if theirs == "" {
		return nil // no status yet, or one cleared by hand
	}
	i := strings.LastIndex(theirs, "/")
	gv, err := schema.ParseGroupVersion(theirs[:max(i, 0)])
	ours := folder.ParentGVK()
	if err == nil && i >= 0 && gv.Group == ours.Group && theirs[i+1:] == ours.Kind {
		return nil
	}
	return fmt.Errorf("the TemplateSet %s keeps the rollout of another set, whose parents are %s (this set's are %s): "+
		"two template sets in folders named %q cannot both have a rollout; rename one of the folders",
		ts.GetName(), theirs, ours.GroupKind(), folder.Name)
}
