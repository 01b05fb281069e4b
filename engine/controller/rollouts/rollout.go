package rollouts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/rollout"
)

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
	rev := v.state.Target(string(parent.GetUID()), IsCanary(parent))
	return rev, v.sets[rev]
}

// IsCanary reports whether parent is one of the parents a rollout moves
// first (rollout.CanaryLabel).
func IsCanary(parent *unstructured.Unstructured) bool {
	return parent.GetLabels()[rollout.CanaryLabel] == "true"
}

// Rollout drives one set's rollout: it keeps the set's TemplateSet and
// TemplateRevisions, runs rollout.Decide when something changes, and
// publishes the view that reconciles read (SetFor).
type Rollout struct {
	host  Host
	cfg   Config
	name  string // the TemplateSet's name
	store *rolloutStore
	view  atomic.Pointer[rolloutView]
	// kick wakes the one goroutine of the rollout: the decisions (run), or
	// the start while it retries watching the TemplateSet.
	kick chan struct{}
	// phase is where the start stands (phaseIdle and the rest).
	phase    atomic.Int32
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
	// unavailable is why there is no rollout state to read yet: the
	// rollout CRDs are missing, Loom may not read or write them, or the
	// first decision failed. A parent then renders nothing and says so.
	unavailable atomic.Pointer[string]
	// wrote holds the statuses (as JSON) of Loom's recent writes of the
	// TemplateSet, noted before each write is sent: a write's watch event
	// can arrive before the write returns, or after the next write.
	wroteMu sync.Mutex
	wrote   [8]string
	wroteN  int
	// suspended is the TemplateSet's spec.suspend as the informer's
	// handlers last saw it, to reconcile every parent when it changes;
	// Suspended reads the informer's store (tsStore), which is filled
	// before the first reconcile, when the handlers may not have run yet.
	suspended atomic.Bool
	tsStore   atomic.Pointer[cache.Store]
	// schema is the SchemaAccepted condition (--install-crds) the next
	// status write carries, or nil.
	schema atomic.Pointer[metav1.Condition]
}

// New returns the rollout of the set that host controls the parents of.
// It starts nothing: the host's start calls BeforeParents and
// BeforeWorkers.
func New(cfg Config, host Host) *Rollout {
	name := templateSetName(host.Folder(), cfg.Namespace)
	cfg.Metrics.init(name)
	return &Rollout{host: host, cfg: cfg, name: name, kick: make(chan struct{}, 1), stored: map[string]bool{},
		store: &rolloutStore{client: cfg.Client, name: name, namespace: cfg.Namespace, fieldManager: cfg.FieldManager,
			timeout: cfg.Timeout}}
}

// Name is the name of the set's TemplateSet.
func (r *Rollout) Name() string { return r.name }

// SetSchema sets the SchemaAccepted condition that the TemplateSet's
// status carries, and asks for a decision, which writes it, if it changed.
func (r *Rollout) SetSchema(cond metav1.Condition) {
	if old := r.schema.Swap(&cond); old == nil || old.Status != cond.Status || old.Reason != cond.Reason || old.Message != cond.Message {
		r.Wake()
	}
}

// Wake asks for a decision soon; it never blocks.
func (r *Rollout) Wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Active reports whether a candidate is moving, so that parents' status
// changes matter to the rollout.
func (r *Rollout) Active() bool {
	v := r.view.Load()
	return v != nil && v.state.CandidateRevision != "" && v.state.Phase == rollout.Progressing
}

// SetFor returns the set and revision a parent renders: the folder's set
// for a set without a rollout policy (revision ""), else its target in the
// view. A nil set means the rollout's state is not loaded yet.
func (r *Rollout) SetFor(parent *unstructured.Unstructured) (*render.Set, string) {
	folder := r.host.Folder()
	if folder.Config.Rollout == nil {
		return folder, ""
	}
	v := r.view.Load()
	if v == nil {
		return nil, ""
	}
	rev, set := v.target(parent)
	return set, rev
}

// The start of a set's rollouts is one state machine, held in phase. It
// only moves forward, each move a compare-and-swap, so that at most one
// goroutine retries the watch and one makes the decisions:
//
//	idle ──▶ starting ──▶ watched ──▶ deciding
//	  │         ▲   └─┘ the watch failed: tried again on a kick (CRDs
//	  └─▶ failed┘       changed) or after a backoff of up to 30s
//
// A controller's start moves it twice. Before the parent informer starts
// (BeforeParents), a set with a rollout policy tries to watch its
// TemplateSet: watched, or failed when it cannot be (the rollout CRDs are
// missing, or Loom's RBAC does not cover them; the controller starts
// anyway and its parents say so in their conditions). Before the workers
// start (BeforeWorkers), a watched rollout makes its first decision, so
// that no parent is reconciled before its revision is known (a reconcile
// without the view waits for it), and a failed one is retried in the
// background. A set without a rollout policy stays idle and costs nothing
// until a reload gives it one (Enable).
const (
	phaseIdle     int32 = iota // no rollout policy seen: nothing runs
	phaseFailed                // the watch failed before the workers started
	phaseStarting              // the TemplateSet is being watched, or retried
	phaseWatched               // the TemplateSet is watched; the first decision is due
	phaseDeciding              // decisions run (run)
)

// BeforeParents tries to watch the set's TemplateSet, before the parent
// informer starts.
func (r *Rollout) BeforeParents(ctx context.Context) {
	if r.host.Folder().Config.Rollout == nil || !r.phase.CompareAndSwap(phaseIdle, phaseStarting) {
		return
	}
	if err := r.watch(ctx); err != nil {
		r.setUnavailable(ctx, err)
		r.phase.Store(phaseFailed)
		return
	}
	r.phase.Store(phaseWatched)
}

// BeforeWorkers makes the first decision once the parent cache has synced
// and before the workers start, then keeps deciding in the background. A
// watch that failed is retried in the background, and a policy the set
// gained by a reload during the sync (reload enables only running
// controllers) is started.
func (r *Rollout) BeforeWorkers(ctx context.Context) {
	switch {
	case r.phase.Load() == phaseWatched:
		r.decideFirst(ctx)
	case r.phase.CompareAndSwap(phaseFailed, phaseStarting):
		go r.retry(ctx, false)
	case r.host.Folder().Config.Rollout != nil:
		r.Enable(ctx)
	}
}

// Enable starts the rollouts of a running controller whose set gained a
// rollout policy. Until its first decision, its parents wait (SetFor).
func (r *Rollout) Enable(ctx context.Context) {
	if r.phase.CompareAndSwap(phaseIdle, phaseStarting) {
		go r.retry(ctx, true)
	}
}

// retry watches the TemplateSet (at once when now is set), and, while
// that fails, again on a kick or after a backoff of up to 30s (RBAC can
// be granted without any CRD changing), then makes the first decision.
func (r *Rollout) retry(ctx context.Context, now bool) {
	backoff := time.Second
	for {
		if !now {
			select {
			case <-ctx.Done():
				return
			case <-r.kick:
			case <-time.After(backoff):
				backoff = min(2*backoff, 30*time.Second)
			}
		}
		now = false
		if err := r.watch(ctx); err != nil {
			r.setUnavailable(ctx, err)
			continue
		}
		r.phase.Store(phaseWatched)
		r.decideFirst(ctx)
		return
	}
}

// decideFirst makes the first decision, then starts the decisions in the
// background.
func (r *Rollout) decideFirst(ctx context.Context) {
	if !r.phase.CompareAndSwap(phaseWatched, phaseDeciding) {
		return
	}
	select {
	case <-r.kick: // a kick meant for the start; this decision reads what it was for
	default:
	}
	if err := r.sync(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Rollout decision failed; retrying", "templateSet", r.name)
	} else {
		r.setUnavailable(ctx, nil)
	}
	go r.run(ctx)
}

// RetryNow asks a start that waits for the rollout CRDs to try again; it
// never blocks, and wakes no decision.
func (r *Rollout) RetryNow() {
	if p := r.phase.Load(); p == phaseFailed || p == phaseStarting {
		r.Wake()
	}
}

// setUnavailable records why the set has no rollout state. A new reason is
// logged, and reaches every parent's conditions (a reconcile reads it);
// nil clears it once a decision succeeded.
func (r *Rollout) setUnavailable(ctx context.Context, err error) {
	if err == nil {
		r.unavailable.Store(nil)
		return
	}
	msg := err.Error()
	if old := r.unavailable.Swap(&msg); old != nil && *old == msg {
		return
	}
	klog.FromContext(ctx).Error(err, "Rollouts are unavailable; the set's parents render nothing until they start", "templateSet", r.name)
	r.host.EnqueueAll()
}

// Why returns why the set has no rollout state, or nil.
func (r *Rollout) Why() error {
	if msg := r.unavailable.Load(); msg != nil {
		return errors.New(*msg)
	}
	return nil
}

// watch starts the informer of this set's TemplateSet.
func (r *Rollout) watch(ctx context.Context) (err error) {
	for _, kind := range []string{v1alpha1.TemplateSetKind, v1alpha1.TemplateRevisionKind} {
		if _, _, err := r.cfg.Resolver.Resource(v1alpha1.GroupVersion.WithKind(kind)); err != nil {
			return errNoRolloutCRDs
		}
	}
	if err = r.store.canRead(ctx); err != nil {
		return err
	}
	r.informer = r.store.informer()
	st := r.informer.GetStore()
	r.tsStore.Store(&st)
	_, _ = r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			r.setSuspended(rollout.Suspended(obj))
			r.Wake()
		},
		UpdateFunc: func(old, cur any) {
			r.setSuspended(rollout.Suspended(cur))
			if !r.ownWrite(old, cur) {
				r.Wake()
			}
		},
		DeleteFunc: func(any) {
			r.setSuspended(false)
			r.Wake()
		},
	})
	// The informer's first list is bounded like any rollout request; one
	// that does not sync in time is stopped, and the start is tried again.
	ictx, stop := context.WithCancel(ctx)
	defer func() {
		if err != nil {
			stop()
		}
	}()
	go r.informer.Run(ictx.Done())
	wctx, cancel := context.WithTimeoutCause(ctx, r.store.timeout,
		fmt.Errorf("the TemplateSet cache did not sync within %s: %w", r.store.timeout, context.DeadlineExceeded))
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), r.informer.HasSynced) {
		return fmt.Errorf("wait for the TemplateSet cache: %w", context.Cause(wctx))
	}
	return nil
}

// Suspended reports whether the set's TemplateSet has spec.suspend true,
// as the TemplateSet's cache holds it: its parents' reconciles write none
// of their children. Without a watched TemplateSet it is false.
func (r *Rollout) Suspended() bool {
	st := r.tsStore.Load()
	if st == nil {
		return false
	}
	obj, ok, _ := (*st).GetByKey(r.name)
	return ok && rollout.Suspended(obj)
}

// setSuspended records the TemplateSet's spec.suspend, and reconciles
// every parent of the set when it changed: a resumed set converges at
// once, and a suspended one says so in each parent's status.
func (r *Rollout) setSuspended(v bool) {
	if r.suspended.Swap(v) != v {
		r.host.EnqueueAll()
	}
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
func (r *Rollout) ownWrite(old, cur any) bool {
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
func (r *Rollout) remember(status string) {
	r.wroteMu.Lock()
	defer r.wroteMu.Unlock()
	r.wrote[r.wroteN%len(r.wrote)] = status
	r.wroteN++
}

// run decides again whenever something wakes it: the TemplateSet changed,
// the folder was reloaded, a moved parent's status changed, or a timeout
// or soak ends. While a candidate moves, it also looks every 5s.
func (r *Rollout) run(ctx context.Context) {
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
			case r.Active() && (next == 0 || next > 5*time.Second):
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
