package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/rollout"
)

// The kinds that keep rollouts in the cluster (crds/).
var (
	templateSetGVR      = schema.GroupVersionResource{Group: "loom.dev", Version: "v1alpha1", Resource: "templatesets"}
	templateRevisionGVR = schema.GroupVersionResource{Group: "loom.dev", Version: "v1alpha1", Resource: "templaterevisions"}
)

// setLabel names the TemplateSet a TemplateRevision belongs to.
const setLabel = "loom.dev/set"

// errNoRolloutCRDs means a set declares a rollout policy, but the cluster
// does not serve TemplateSet and TemplateRevision.
var errNoRolloutCRDs = errors.New("the set declares a rollout policy, but the cluster does not serve templatesets.loom.dev and templaterevisions.loom.dev (kubectl apply -f crds/)")

// rolloutView is what a reconcile reads of its set's rollout: the state as
// last decided, and the loaded set of each revision it names.
type rolloutView struct {
	state rollout.State
	sets  map[string]*render.Set
}

// target is the revision parent renders and its set.
func (v *rolloutView) target(parent *unstructured.Unstructured) (string, *render.Set) {
	rev := v.state.Target(string(parent.GetUID()), isCanary(parent))
	return rev, v.sets[rev]
}

func isCanary(parent *unstructured.Unstructured) bool {
	return parent.GetLabels()[rollout.CanaryLabel] == "true"
}

// rollouts drives one set's rollout: it keeps the set's TemplateSet and
// TemplateRevisions, runs rollout.Decide when something changes, and
// publishes the view that reconciles read.
type rollouts struct {
	c        *parentController
	name     string // the TemplateSet's name
	view     atomic.Pointer[rolloutView]
	kick     chan struct{}
	informer cache.SharedIndexInformer // the one TemplateSet, once the CRDs are served
	stored   map[string]bool           // revisions known to be kept in the cluster
	after    time.Duration             // when the last decision asked to decide again
	// last is the TemplateSet as Loom last wrote it. The informer may
	// not have caught up with that write when the next decision reads,
	// and a decision from an older state could move parents back.
	last *unstructured.Unstructured
	// behind holds the TemplateSet's resourceVersions that the cache can
	// hold while it has not caught up with last: the one the first of
	// Loom's writes since the cache was read was based on, and each write
	// but the last. Every status write names the version it is based on
	// (a conflict otherwise), so no other writer's version comes between
	// them, and any other version the cache holds is last or newer, or
	// the world as an etcd restore left it. resourceVersions are opaque:
	// their order is never read.
	behind []string
	// pruned names the revisions the last prune kept.
	pruned string
	// on is set once the TemplateSet is watched and decisions run;
	// begun once the first attempt to start them was made.
	on, begun atomic.Bool
	// unavailable is why there is no rollout state to read yet: the
	// rollout CRDs are missing, Loom may not read or write them, or the
	// first decision failed. A parent then renders nothing and says so.
	unavailable atomic.Pointer[string]
	// retry is kicked when CRDs change, so that a start waiting for the
	// rollout CRDs tries again at once.
	retry chan struct{}
	// wrote holds the statuses (as JSON) of Loom's recent writes of the
	// TemplateSet, noted before each write is sent: a write's watch event
	// can arrive before the write returns, or after the next write.
	wroteMu sync.Mutex
	wrote   [8]string
	wroteN  int
}

func newRollouts(c *parentController) *rollouts {
	return &rollouts{c: c, name: templateSetName(c.set.Load(), c.m.opts.Namespace), kick: make(chan struct{}, 1),
		retry: make(chan struct{}, 1), stored: map[string]bool{}}
}

var invalidName = regexp.MustCompile(`[^a-z0-9.-]+`)

// templateSetName is the TemplateSet of set: its folder's name, made a
// valid object name, and, for a Loom that watches one namespace, that
// namespace after a dot, so that Looms of different namespaces keep
// rollouts of their own.
func templateSetName(set *render.Set, namespace string) string {
	n := strings.Trim(invalidName.ReplaceAllString(strings.ToLower(set.Name), "-"), "-.")
	if n == "" {
		n = "set"
	}
	if namespace != "" {
		n += "." + namespace
	}
	return n
}

// wake asks for a decision soon; it never blocks.
func (r *rollouts) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// active reports whether a candidate is moving, so that parents' status
// changes matter to the rollout.
func (r *rollouts) active() bool {
	v := r.view.Load()
	return v != nil && v.state.CandidateRevision != "" && v.state.Phase == rollout.Progressing
}

// setFor returns the set and revision a parent renders: the folder's set
// for a set without a rollout policy (revision ""), else its target in the
// view. A nil set means the rollout's state is not loaded yet.
func (c *parentController) setFor(parent *unstructured.Unstructured) (*render.Set, string) {
	folder := c.set.Load()
	if folder.Config.Rollout == nil || c.rollouts == nil {
		return folder, ""
	}
	v := c.rollouts.view.Load()
	if v == nil {
		return nil, ""
	}
	rev, set := v.target(parent)
	return set, rev
}

// check starts the informer of the set's TemplateSet, before the parent
// informer starts. A set without a rollout policy has no TemplateSet and
// costs nothing here: rollouts start when a reload gives it a policy
// (enable).
//
// When the TemplateSet cannot be watched (the rollout CRDs are missing,
// or Loom's RBAC does not cover them), the controller starts anyway: its
// parents say so in their conditions, and start keeps trying.
func (r *rollouts) check(ctx context.Context) {
	if r.c.set.Load().Config.Rollout == nil || !r.begun.CompareAndSwap(false, true) {
		return
	}
	if err := r.watch(ctx); err != nil {
		r.setUnavailable(ctx, err)
		return
	}
	r.on.Store(true)
}

// enable starts the rollouts of a running controller whose set gained a
// rollout policy. Until its first decision, its parents wait (setFor).
func (r *rollouts) enable(ctx context.Context) {
	if !r.begun.CompareAndSwap(false, true) {
		return
	}
	go func() {
		if err := r.watch(ctx); err != nil {
			r.setUnavailable(ctx, err)
			r.retryStart(ctx)
			return
		}
		r.on.Store(true)
		r.start(ctx)
	}()
}

// start makes the first decision once the parent cache has synced and
// before the workers start, so that no parent of a set with a rollout
// policy is reconciled before its revision is known (a reconcile without
// the view waits for it), then keeps deciding in the background. Rollouts
// that could not be watched are retried in the background.
func (r *rollouts) start(ctx context.Context) {
	if !r.on.Load() {
		if r.begun.Load() {
			go r.retryStart(ctx)
		}
		return
	}
	if err := r.sync(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Rollout decision failed; retrying", "templateSet", r.name)
	} else {
		r.setUnavailable(ctx, nil)
	}
	go r.run(ctx)
}

// retryStart tries to watch the TemplateSet again when CRDs change, and
// otherwise after a backoff of up to 30s (RBAC can be granted without any
// CRD changing), then starts the decisions.
func (r *rollouts) retryStart(ctx context.Context) {
	backoff := time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.retry:
		case <-time.After(backoff):
			backoff = min(2*backoff, 30*time.Second)
		}
		if err := r.watch(ctx); err != nil {
			r.setUnavailable(ctx, err)
			continue
		}
		r.on.Store(true)
		r.start(ctx)
		return
	}
}

// retryNow asks a start that waits for the rollout CRDs to try again.
func (r *rollouts) retryNow() {
	select {
	case r.retry <- struct{}{}:
	default:
	}
}

// setUnavailable records why the set has no rollout state. A new reason is
// logged, and reaches every parent's conditions (a reconcile reads it);
// nil clears it once a decision succeeded.
func (r *rollouts) setUnavailable(ctx context.Context, err error) {
	if err == nil {
		r.unavailable.Store(nil)
		return
	}
	msg := err.Error()
	if old := r.unavailable.Swap(&msg); old != nil && *old == msg {
		return
	}
	klog.FromContext(ctx).Error(err, "Rollouts are unavailable; the set's parents render nothing until they start", "templateSet", r.name)
	if c := r.c; c.running.Load() {
		for _, k := range c.informer.GetStore().ListKeys() {
			if name, err := cache.ParseObjectName(k); err == nil {
				c.queue.Add(name)
			}
		}
	}
}

// why returns why the set has no rollout state, or nil.
func (r *rollouts) why() error {
	if msg := r.unavailable.Load(); msg != nil {
		return errors.New(*msg)
	}
	return nil
}

// watch starts the informer of this set's TemplateSet.
func (r *rollouts) watch(ctx context.Context) error {
	for _, kind := range []string{"TemplateSet", "TemplateRevision"} {
		if _, _, err := r.c.m.applier.Resource(schema.GroupVersionKind{Group: "loom.dev", Version: "v1alpha1", Kind: kind}); err != nil {
			return errNoRolloutCRDs
		}
	}
	// A Loom whose RBAC does not cover rollouts must not wait for an
	// informer that can never sync.
	if _, err := r.c.m.client.Resource(templateSetGVR).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + r.name, Limit: 1}); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("Loom may not read TemplateSets (see deploy/rbac.yaml): %w", err)
		}
		return fmt.Errorf("list TemplateSet %s: %w", r.name, err)
	}
	r.informer = dynamicinformer.NewFilteredDynamicInformer(r.c.m.client, templateSetGVR, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + r.name }).Informer()
	_, _ = r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { r.wake() },
		UpdateFunc: func(old, cur any) {
			if !r.ownWrite(old, cur) {
				r.wake()
			}
		},
		DeleteFunc: func(any) { r.wake() },
	})
	go r.informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), r.informer.HasSynced) {
		return fmt.Errorf("wait for the TemplateSet cache: %w", context.Cause(ctx))
	}
	return nil
}

// ownWrite reports whether an update of the TemplateSet is the echo of
// Loom's own status write: the same object and spec (generation), with a
// status Loom recently wrote. That echo wakes no decision: one that did
// would write the parents' counts again, in a loop, for as long as parents
// come and go. Any other change does: a spec edit, or a status someone
// else changed or cleared, which the decision restores.
//
// The echo is known by its content, not its resourceVersion, which Loom
// learns only when the write returns, and the echo can come first.
func (r *rollouts) ownWrite(old, cur any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	n, ok2 := cur.(*unstructured.Unstructured)
	if !ok1 || !ok2 || o.GetUID() != n.GetUID() || o.GetGeneration() != n.GetGeneration() {
		return false
	}
	st, ok := n.Object["status"].(map[string]any)
	if !ok {
		return false
	}
	b, err := json.Marshal(st)
	if err != nil {
		return false
	}
	r.wroteMu.Lock()
	defer r.wroteMu.Unlock()
	return slices.Contains(r.wrote[:], string(b))
}

// remember notes status as one Loom is about to write.
func (r *rollouts) remember(status string) {
	r.wroteMu.Lock()
	defer r.wroteMu.Unlock()
	r.wrote[r.wroteN%len(r.wrote)] = status
	r.wroteN++
}

// run decides again whenever something wakes it: the TemplateSet changed,
// the folder was reloaded, a moved parent's status changed, or a timeout
// or soak ends. While a candidate moves, it also looks every 5s.
func (r *rollouts) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("templateSet", r.name)
	backoff := time.Second
	for {
		next := r.after
		if err := r.sync(ctx); err != nil {
			logger.Error(err, "Rollout decision failed; retrying", "in", backoff)
			if r.view.Load() == nil {
				r.setUnavailable(ctx, err)
			}
			next, backoff = backoff, min(2*backoff, time.Minute)
		} else {
			r.setUnavailable(ctx, nil)
			backoff = time.Second
			next = r.after
			switch {
			case r.active() && (next == 0 || next > 5*time.Second):
				next = 5 * time.Second
			case next == 0:
				next = 30 * time.Second // the parents' counts
			}
		}
		var timer <-chan time.Time
		if next > 0 {
			timer = time.After(next)
		}
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-timer:
		}
		// Coalesce a burst of parent updates into one decision.
		select {
		case <-ctx.Done():
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// sync makes one decision and carries it out, in an order that a crash at
// any point leaves recoverable: the candidate's files are kept before the
// state names them, the state is written before parents move, and old
// revisions are deleted last.
func (r *rollouts) sync(ctx context.Context) error {
	c := r.c
	logger := klog.FromContext(ctx).WithValues("templateSet", r.name)
	folder := c.set.Load()
	rev := folder.Revision()

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
	in := rollout.Input{Policy: folder.Config.Rollout, Revision: rev, State: prev, Controls: controls, Now: c.m.opts.Clock.Now()}
	var objs map[string]*unstructured.Unstructured
	if folder.Config.Rollout != nil || prev.CandidateRevision != "" {
		in.Parents, objs = r.parents()
	} else {
		// Without a rollout, only the count of parents is shown: no
		// parent is decoded.
		in.Count = len(c.informer.GetStore().ListKeys())
	}
	if err := r.ensureStable(ctx, &in); err != nil {
		return err
	}
	d := rollout.Decide(in)
	r.after = d.After

	// 3. Keep the files of every revision the state names, then the state.
	sets, err := r.load(ctx, folder, d.State)
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
		c.m.recorder.Event(ts, typ, e.Reason, e.Message)
		if e.Reason == "RolloutFailed" {
			if p := objs[d.State.FailedParent]; p != nil {
				c.m.recorder.Event(p, corev1.EventTypeWarning, e.Reason, e.Message)
			}
		}
		logger.Info("Rollout", "reason", e.Reason, "message", e.Message)
	}

	// 4. Publish the view, and reconcile the parents whose revision moved.
	old := r.view.Swap(&rolloutView{state: d.State, sets: sets})
	for _, p := range objs {
		k := rollout.Key(string(p.GetUID()), isCanary(p))
		if old == nil || old.state.TargetOf(k) != d.State.TargetOf(k) {
			c.queue.Add(cache.NewObjectName(p.GetNamespace(), p.GetName()))
		}
	}
	r.metrics(d.State)

	// 5. Forget revisions the state no longer names.
	return r.prune(ctx, d.State)
}

// templateSet returns this set's TemplateSet, created if missing: Loom's
// last write of it while the cache has not caught up with that write (see
// behind), the cached one otherwise.
func (r *rollouts) templateSet(ctx context.Context, folder *render.Set) (*unstructured.Unstructured, error) {
	if obj, ok, _ := r.informer.GetStore().GetByKey(r.name); ok {
		cached := obj.(*unstructured.Unstructured)
		if r.last != nil && r.last.GetUID() == cached.GetUID() && slices.Contains(r.behind, cached.GetResourceVersion()) {
			return r.last.DeepCopy(), nil
		}
		r.last, r.behind = nil, nil
		return cached.DeepCopy(), nil
	}
	r.last, r.behind = nil, nil
	ts := &unstructured.Unstructured{}
	ts.SetAPIVersion("loom.dev/v1alpha1")
	ts.SetKind("TemplateSet")
	ts.SetName(r.name)
	ts.SetLabels(r.labels())
	ts.SetAnnotations(map[string]string{"loom.dev/folder": folder.Dir})
	created, err := r.c.m.client.Resource(templateSetGVR).Create(ctx, ts, metav1.CreateOptions{FieldManager: r.c.m.opts.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return r.c.m.client.Resource(templateSetGVR).Get(ctx, r.name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("create TemplateSet %s: %w", r.name, err)
	}
	return created, nil
}

// parents returns what Decide needs of every parent, and the parents by
// namespace/name. Each reads the newest status Loom knows of.
func (r *rollouts) parents() ([]rollout.Parent, map[string]*unstructured.Unstructured) {
	c := r.c
	list := c.informer.GetStore().List()
	out := make([]rollout.Parent, 0, len(list))
	objs := make(map[string]*unstructured.Unstructured, len(list))
	for _, o := range list {
		p, ok := unpack(o)
		if !ok || p.GetDeletionTimestamp() != nil {
			continue
		}
		p = c.previous(p)
		name := p.GetNamespace() + "/" + p.GetName()
		objs[name] = p
		st, _ := p.Object["status"].(map[string]any)
		gen, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
		current := gen == p.GetGeneration()
		rev, _ := st["templateRevision"].(string)
		ready, degraded := conditionOf(st, "Ready"), conditionOf(st, "Degraded")
		msg := ready.message
		if degraded.status == "True" {
			msg = degraded.message
		}
		out = append(out, rollout.Parent{Name: name, UID: string(p.GetUID()), Canary: isCanary(p), Revision: rev,
			Ready: current && ready.status == "True", Degraded: current && degraded.status == "True", Message: msg})
	}
	return out, objs
}

// ensureStable handles a stable revision whose files are gone (someone
// deleted its TemplateRevision): the folder's revision becomes stable, as
// on a first start, and a Warning says so.
func (r *rollouts) ensureStable(ctx context.Context, in *rollout.Input) error {
	s := in.State.StableRevision
	if s == "" || s == in.Revision || r.stored[s] {
		return nil
	}
	if v := r.view.Load(); v != nil && v.sets[s] != nil {
		return nil
	}
	_, err := r.c.m.client.Resource(templateRevisionGVR).Get(ctx, r.revisionName(s), metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("read TemplateRevision %s: %w", r.revisionName(s), err)
	}
	klog.FromContext(ctx).Error(nil, "The stable revision's files are gone; the folder's revision becomes stable",
		"templateSet", r.name, "stable", s, "folder", in.Revision)
	in.State = rollout.State{}
	return nil
}

func (r *rollouts) revisionName(rev string) string { return r.name + "-" + rev }

// namespaceLabel marks the TemplateSets and TemplateRevisions of a Loom
// that watches one namespace with that namespace.
const namespaceLabel = "loom.dev/namespace"

// labels are the labels of this set's TemplateSet and TemplateRevisions.
func (r *rollouts) labels() map[string]string {
	l := map[string]string{setLabel: r.name}
	if ns := r.c.m.opts.Namespace; ns != "" {
		l[namespaceLabel] = ns
	}
	return l
}

// load returns the loaded set of each revision s names, keeping the
// folder's in the cluster first if s names it.
func (r *rollouts) load(ctx context.Context, folder *render.Set, s rollout.State) (map[string]*render.Set, error) {
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
			if err := r.store(ctx, have, rev); err != nil {
				return nil, err
			}
			sets[rev] = have
			continue
		}
		obj, err := r.c.m.client.Resource(templateRevisionGVR).Get(ctx, r.revisionName(rev), metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read TemplateRevision %s: %w", r.revisionName(rev), err)
		}
		files, _, _ := unstructured.NestedStringMap(obj.Object, "files")
		raw := make(map[string][]byte, len(files))
		for n, f := range files {
			raw[n] = []byte(f)
		}
		set, err := render.LoadSources(folder.Dir, raw)
		if err != nil {
			return nil, fmt.Errorf("load TemplateRevision %s: %w", r.revisionName(rev), err)
		}
		r.stored[rev] = true
		sets[rev] = set
	}
	return sets, nil
}

// store keeps the files of set, revision rev, in a TemplateRevision.
func (r *rollouts) store(ctx context.Context, set *render.Set, rev string) error {
	if r.stored[rev] {
		return nil
	}
	files := map[string]any{}
	for n, b := range set.Sources() {
		files[n] = string(b)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "loom.dev/v1alpha1", "kind": "TemplateRevision",
		"metadata": map[string]any{"name": r.revisionName(rev)},
		"set":      r.name, "revision": rev, "files": files,
	}}
	obj.SetLabels(r.labels())
	if ts, ok, _ := r.informer.GetStore().GetByKey(r.name); ok {
		owner := ts.(*unstructured.Unstructured)
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "loom.dev/v1alpha1", Kind: "TemplateSet", Name: owner.GetName(), UID: owner.GetUID()}})
	}
	_, err := r.c.m.client.Resource(templateRevisionGVR).Create(ctx, obj, metav1.CreateOptions{FieldManager: r.c.m.opts.FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("keep revision %s of %s: %w", rev, set.Dir, err)
	}
	r.stored[rev] = true
	return nil
}

// writeState writes s to the TemplateSet's status when it changed. The
// write carries the resourceVersion it read, so a stale decision (another
// Loom's, or one raced by a user's edit) fails and is made again.
func (r *rollouts) writeState(ctx context.Context, ts *unstructured.Unstructured, folder *render.Set, s rollout.State) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	st["set"] = folder.Dir
	st["parentKind"] = folder.ParentGVK().GroupVersion().String() + "/" + folder.ParentGVK().Kind
	old, _ := ts.Object["status"].(map[string]any)
	var conds []metav1.Condition
	if b, err := json.Marshal(old["conditions"]); err == nil {
		_ = json.Unmarshal(b, &conds)
	}
	for _, cond := range rollout.Conditions(s) {
		cond.ObservedGeneration = ts.GetGeneration()
		meta.SetStatusCondition(&conds, cond)
	}
	if b, err := json.Marshal(conds); err == nil {
		var list []any
		_ = json.Unmarshal(b, &list)
		st["conditions"] = list
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
	written, err := r.c.m.client.Resource(templateSetGVR).UpdateStatus(ctx, ts, metav1.UpdateOptions{FieldManager: r.c.m.opts.FieldManager})
	if err != nil {
		if apierrors.IsConflict(err) {
			r.last, r.behind = nil, nil // the next decision reads the cache
		}
		return fmt.Errorf("write the status of TemplateSet %s: %w", r.name, err)
	}
	r.last, r.behind = written, append(r.behind, ts.GetResourceVersion())
	return nil
}

// prune deletes this set's TemplateRevisions that s does not name. It
// lists them only when the revisions s names changed.
func (r *rollouts) prune(ctx context.Context, s rollout.State) error {
	keep := s.StableRevision + "/" + s.CandidateRevision
	if keep == r.pruned {
		return nil
	}
	list, err := r.c.m.client.Resource(templateRevisionGVR).List(ctx, metav1.ListOptions{LabelSelector: setLabel + "=" + r.name})
	if err != nil {
		return fmt.Errorf("list the TemplateRevisions of %s: %w", r.name, err)
	}
	for _, item := range list.Items {
		rev, _, _ := unstructured.NestedString(item.Object, "revision")
		if rev == s.StableRevision || rev == s.CandidateRevision {
			continue
		}
		err := r.c.m.client.Resource(templateRevisionGVR).Delete(ctx, item.GetName(), metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: ptr.To(item.GetUID())}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete TemplateRevision %s: %w", item.GetName(), err)
		}
		delete(r.stored, rev)
	}
	r.pruned = keep
	return nil
}

// metrics publishes the rollout's step and parents per revision.
func (r *rollouts) metrics(s rollout.State) {
	m := r.c.m.metrics
	m.rolloutStep.WithLabelValues(r.name).Set(float64(s.Step))
	m.revParents.WithLabelValues(r.name, "candidate").Set(float64(s.Parents.Moved))
	m.revParents.WithLabelValues(r.name, "stable").Set(float64(s.Parents.Total - s.Parents.Moved))
}
