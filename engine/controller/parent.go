package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/finalizer"
	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/controller/rollouts"
	"github.com/loom-operator/loom/engine/controller/statuswriter"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/shard"
	"github.com/loom-operator/loom/engine/status"
)

// Controller reconciles the objects of one parent kind, following
// the shape of kubernetes/sample-controller: event handlers only enqueue,
// workers drain a rate-limited queue keyed by namespace/name.
type Controller struct {
	// sh is what the controller uses of the Manager's; nil in unit tests
	// without one.
	sh  *Shared
	gvk schema.GroupVersionKind
	set atomic.Pointer[render.Set]

	gvr schema.GroupVersionResource
	// gen is the parent informer's live generation (parentgen.go).
	gen         atomic.Pointer[parentGen]
	reshardKick chan struct{}
	queue       workqueue.TypedRateLimitingInterface[cache.ObjectName]
	running     atomic.Bool
	workers     sync.WaitGroup
	// progress is when the workers last took or finished a reconcile,
	// for Manager.Live; startErr is why the last start failed, for
	// Manager.Ready (nil before the first attempt ends).
	progress progress
	startErr atomic.Pointer[startResult]
	// kick wakes a controller that waits for its kind to be served.
	kick chan struct{}
	// awaiting is set while the controller waits for its kind.
	awaiting atomic.Bool
	// done is closed when the controller has stopped for good and its
	// in-flight reconciles have finished.
	done   chan struct{}
	logger klog.Logger
	ctx    context.Context // cancelled when the set is removed
	cancel context.CancelFunc

	// guards are the finalizers of its parents (finalize.go), from
	// start on.
	guards *finalizer.Guards

	// status writes the parents' status, and remembers what it wrote
	// (engine/controller/statuswriter).
	status statusWriter

	// mu guards unserved.
	mu sync.Mutex
	// unserved holds the parents whose last reconcile met a child kind the
	// cluster does not serve; they are retried each time discovery is
	// refreshed, which happens with backoff while any is held here.
	unserved map[cache.ObjectName]bool
	// rollouts drives the set's rollout; nil in unit tests without a
	// Manager.
	rollouts *rollouts.Rollout
}

func newParentController(sh *Shared, set *render.Set) *Controller {
	c := &Controller{sh: sh, gvk: set.ParentGVK(),
		unserved: map[cache.ObjectName]bool{}, kick: make(chan struct{}, 1), reshardKick: make(chan struct{}, 1), done: make(chan struct{})}
	c.set.Store(set)
	if sh != nil {
		c.status = newStatusWriter(c)
		c.rollouts = newRollout(c)
	}
	return c
}

// statusWriter is what a parent controller asks of the writer of its
// parents' status (statuswriter.Writer): write a status, read the newest
// status Loom knows of, and follow what the parent cache delivers and
// which parents go. It is an interface so that the tests of what the
// controller keeps per parent can see what it tells the writer.
type statusWriter interface {
	Write(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, in status.Input) error
	Previous(parent *unstructured.Unstructured) *unstructured.Unstructured
	CaughtUp(uid types.UID, rv string)
	Forget(uid types.UID)
	RetryNoStatus() map[types.UID]bool
}

// newStatusWriter returns the status writer of c, which reads c's parent
// cache.
func newStatusWriter(c *Controller) *statuswriter.Writer {
	sh := c.sh
	return statuswriter.New(statuswriter.Config{Client: sh.Client, GVK: c.gvk,
		Resource:     func() schema.GroupVersionResource { return c.gvr },
		FieldManager: sh.FieldManager, Clock: sh.Clock, Recorder: sh.Recorder, Writes: sh.Metrics.StatusWrites,
		Cached: c.parentVersion, Parent: c.parentGet})
}

// errNotServed means the parent kind has no CRD (yet).
var errNotServed = errors.New("parent kind is not served by the cluster")

// start resolves the parent's resource, starts its informer and workers,
// and returns once the cache has synced. It fails with errNotServed while
// the kind has no CRD; the Manager calls it again when CRDs change. Once
// ctx is done, drain waits for the workers.
func (c *Controller) start(ctx context.Context, workers int) error {
	gvr, _, err := c.sh.Applier.Resource(c.gvk)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errNotServed, c.gvk, err)
	}
	// Served now: until the cache syncs, Ready must count this start as
	// pending, not as the kind's earlier absence.
	c.startErr.Store(nil)
	if c.rollouts != nil {
		c.rollouts.BeforeParents(ctx)
	}
	c.gvr = gvr
	c.guards = c.newGuards()
	c.queue = newParentQueue(c.gvk, nil)
	logger := klog.FromContext(ctx).WithValues("kind", c.gvk.Kind)
	c.logger = logger
	// Parents are cached packed from the API server's JSON without
	// managedFields and kubectl's last-applied copy (pack.StripJSON); a
	// sharded replica caches only the parents of its buckets.
	held := shard.All()
	if c.sh.Shard != nil {
		held = c.sh.Shard.Held()
	}
	g := c.newGen(ctx, held, nil)
	c.gen.Store(g)
	c.sh.Metrics.Parents.Track(c, c.gvk.Kind, g.states)
	c.sh.Metrics.InitKind(c.gvk.Kind)
	logger.Info("Waiting for informer cache to sync", "resource", gvr.String())
	if !cache.WaitForCacheSync(ctx.Done(), g.informer.HasSynced) {
		c.queue.ShutDown()
		return fmt.Errorf("wait for %s cache to sync: %w", gvr, context.Cause(ctx))
	}
	// Readers of gvr, informer, queue and logger that run outside the
	// workers check running first, which orders their reads after these
	// writes.
	c.progress.mark(c.sh.Clock.Now())
	c.running.Store(true)
	if c.rollouts != nil {
		c.rollouts.BeforeWorkers(ctx)
	}
	for range workers {
		c.workers.Add(1)
		go func() {
			defer c.workers.Done()
			wait.UntilWithContext(ctx, c.runWorker, time.Second)
		}()
	}
	if c.sh.Shard != nil {
		go c.reshard(ctx)
		c.kickReshard() // the buckets may have moved while the cache synced
	}
	logger.Info("Started workers", "count", workers)
	return nil
}

// drain stops a started controller whose context is done: the queue takes
// nothing new, and drain returns once in-flight reconciles have finished.
func (c *Controller) drain() {
	c.queue.ShutDownWithDrain()
	c.workers.Wait()
}

// onUpdate enqueues a parent when something Loom renders from changed:
// its spec (generation), labels, annotations or deletion. Status-only
// updates, such as Loom's own status writes, are ignored, so writing status
// never triggers another reconcile. Periodic resyncs are let through.
//
// An update whose UID differs is a new object: the parent was deleted and
// created again under the same name while the watch was down, and the
// relist reports it as an update. It is always enqueued.
func (c *Controller) onUpdate(old, cur any) {
	if id, ok := packwatch.ID(cur); ok {
		c.status.CaughtUp(id.GetUID(), id.GetResourceVersion())
	}
	if c.rollouts != nil && c.rollouts.Active() {
		c.rollouts.Wake() // a moved parent's status may end a step
	}
	o, ok1 := packwatch.Unpack(old)
	n, ok2 := packwatch.Unpack(cur)
	if ok1 && ok2 && o.GetUID() != n.GetUID() {
		c.forget(cache.MetaObjectToName(o), o.GetUID())
	} else if ok1 && ok2 && !renderInputChanged(o, n) {
		return
	}
	c.enqueue(cur)
}

// renderInputChanged reports whether an update of one object changed what
// a render reads. A kind without metadata.generation (a built-in kind such
// as ConfigMap used as a parent) has no counter of spec changes, so for it
// every top-level field but status is compared.
func renderInputChanged(o, n *unstructured.Unstructured) bool {
	switch {
	case o.GetResourceVersion() == n.GetResourceVersion(): // a periodic resync
		return true
	case o.GetGeneration() != n.GetGeneration(),
		!mapsEqual(o.GetLabels(), n.GetLabels()),
		!mapsEqual(o.GetAnnotations(), n.GetAnnotations()),
		(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil):
		return true
	case n.GetGeneration() == 0:
		return !equality.Semantic.DeepEqual(withoutStatusAndMetadata(o), withoutStatusAndMetadata(n))
	}
	return false
}

// withoutStatusAndMetadata returns a shallow copy of obj's top-level fields
// without status and metadata (whose parts a render reads are compared
// on their own).
func withoutStatusAndMetadata(obj *unstructured.Unstructured) map[string]any {
	out := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		if k != "status" && k != "metadata" {
			out[k] = v
		}
	}
	return out
}

// onDelete forgets what Loom remembers of a deleted parent. Its children
// go with it: the garbage collector follows their ownerReferences.
func (c *Controller) onDelete(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	var uid types.UID
	if id, ok := packwatch.ID(obj); ok {
		uid = id.GetUID()
	}
	c.forget(key, uid)
	c.queue.Forget(key)
}

// forget drops everything kept per parent for the object key with uid:
// the status last written, the missing status subresource, and whether it
// waits for a child kind. It is called when that object is deleted or
// replaced by a new one of the same name.
func (c *Controller) forget(key cache.ObjectName, uid types.UID) {
	if c.sh != nil && c.sh.Cache != nil { // nil: a Manager that never ran
		c.sh.Cache.Forget(childcache.ParentKey{GroupKind: c.gvk.GroupKind(), Name: key})
	}
	c.status.Forget(uid)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.unserved, key)
}

// forgetIfGone forgets parent after a reconcile of it if the cache no
// longer holds it (or holds a new object of that name): the reconcile may
// have recorded state after the delete event dropped it.
func (c *Controller) forgetIfGone(key cache.ObjectName, uid types.UID) {
	if uid == "" {
		return
	}
	if cur, ok := c.parentUID(key); ok && cur == uid {
		return
	}
	c.forget(key, uid)
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// EnqueueAll enqueues every parent in the cache (template change, CRD change).
func (c *Controller) EnqueueAll() {
	if !c.running.Load() {
		return
	}
	for _, obj := range c.store().List() {
		c.enqueue(obj)
	}
}

// EnqueueUnserved enqueues the parents that wait for a child kind's CRD.
func (c *Controller) EnqueueUnserved() {
	if !c.running.Load() {
		return
	}
	c.mu.Lock()
	keys := make([]cache.ObjectName, 0, len(c.unserved))
	for k := range c.unserved {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	for _, k := range keys {
		c.queue.Add(k)
	}
}

// retryStatus reconciles again the parents whose CRD had no status
// subresource, and lets their next reconcile try the write: a CRD changed,
// and may have gained one. They stay marked as told.
func (c *Controller) retryStatus() {
	if !c.running.Load() {
		return
	}
	uids := c.status.RetryNoStatus()
	if len(uids) == 0 {
		return
	}
	for _, obj := range c.store().List() {
		if id, ok := packwatch.ID(obj); ok && uids[id.GetUID()] {
			c.enqueue(obj)
		}
	}
}

// setUnserved records whether a parent waits for a child kind's CRD. The
// first parent to wait has the Manager refresh discovery with backoff
// until the kind is served.
func (c *Controller) setUnserved(key cache.ObjectName, waiting bool) {
	c.mu.Lock()
	first := waiting && len(c.unserved) == 0
	if waiting {
		c.unserved[key] = true
	} else {
		delete(c.unserved, key)
	}
	c.mu.Unlock()
	if first && c.sh != nil {
		c.sh.KindAwaited()
	}
}

// AwaitsKind reports whether the controller waits for its parent kind to be
// served, or one of its parents for a child kind.
func (c *Controller) AwaitsKind() bool {
	if c.awaiting.Load() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.unserved) > 0
}

// OnChild enqueues the parent a child event belongs to, after checking
// that the cached parent is the very object (same UID) that owns the child.
func (c *Controller) OnChild(ev childcache.OwnerEvent) {
	if !c.running.Load() {
		return
	}
	key := cache.NewObjectName(ev.Namespace, ev.Ref.Name)
	if uid, ok := c.parentUID(key); !ok || uid != ev.Ref.UID {
		return
	}
	c.logger.V(4).Info("Child changed; enqueueing its parent", "parent", key.String(),
		"child", klog.KObj(ev.Child), "kind", ev.Child.GetKind(), "resourceVersion", ev.Child.GetResourceVersion())
	c.queue.Add(key)
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextItem(ctx) {
	}
}

func (c *Controller) processNextItem(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	c.progress.mark(c.sh.Clock.Now())
	defer func() { c.progress.mark(c.sh.Clock.Now()) }()
	if ctx.Err() != nil {
		// Shutting down: finish what is in flight, start nothing new. The
		// next Loom lists every parent and reconciles it.
		return false
	}
	logger := klog.FromContext(ctx).WithValues("kind", c.gvk.Kind, "parent", key.String())
	// Shutdown lets an in-flight reconcile finish rather than cancelling
	// its requests half way; the timeout bounds it either way.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.sh.ReconcileTimeout)
	defer cancel()
	start := time.Now()
	// The parent is read once: the gate is entered, and the guard checks
	// writes, for the very object the reconcile acts on.
	parent, _ := c.parentGet(key)
	var uid types.UID
	if parent != nil {
		uid = parent.GetUID()
	}
	rctx, done, ok := c.enterShard(klog.NewContext(rctx, logger), parent)
	if !ok {
		// Another replica owns the parent now (it moved while queued).
		logger.V(4).Info("Not this replica's parent; skipped")
		c.queue.Forget(key)
		return true
	}
	err := c.reconcile(rctx, key, parent)
	done()
	c.forgetIfGone(key, uid)
	c.sh.Metrics.ObserveReconcile(c.gvk.Kind, err, time.Since(start))
	if err == nil {
		logger.V(4).Info("Reconciled", "duration", time.Since(start))
		c.queue.Forget(key)
		return true
	}
	logger.Error(err, "Reconcile failed; will retry", "retries", c.queue.NumRequeues(key))
	c.queue.AddRateLimited(key)
	return true
}

// parentGet returns the cached parent, as a copy the caller owns.
func (c *Controller) parentGet(key cache.ObjectName) (*unstructured.Unstructured, bool) {
	obj, exists, err := c.store().GetByKey(key.String())
	if err != nil || !exists {
		return nil, false
	}
	return packwatch.Unpack(obj)
}

// objectID is what identifies one version of an object.
type objectID interface {
	GetUID() types.UID
	GetResourceVersion() string
}

// parentID returns the UID and resourceVersion of the cached parent,
// without decoding it.
func (c *Controller) parentID(key cache.ObjectName) (objectID, bool) {
	obj, exists, err := c.store().GetByKey(key.String())
	if err != nil || !exists {
		return nil, false
	}
	return packwatch.ID(obj)
}

// parentVersion returns the UID and resourceVersion of the cached parent,
// without decoding it; ok is false before the controller started.
func (c *Controller) parentVersion(key cache.ObjectName) (uid types.UID, rv string, ok bool) {
	if c.gen.Load() == nil {
		return "", "", false // not started
	}
	id, ok := c.parentID(key)
	if !ok {
		return "", "", false
	}
	return id.GetUID(), id.GetResourceVersion(), true
}

// parentUID returns the UID of the cached parent, without decoding it.
func (c *Controller) parentUID(key cache.ObjectName) (types.UID, bool) {
	id, ok := c.parentID(key)
	if !ok {
		return "", false
	}
	return id.GetUID(), true
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// newParentQueue returns the work queue of a parent kind's controller,
// reporting its metrics to provider (client-go's global provider if nil)
// under the name Kind.group ("MyResource.example.loom.dev"; a core kind
// is its Kind alone), so that same-named kinds of two groups, which have
// a queue each, do not share their metrics.
func newParentQueue(gvk schema.GroupVersionKind, provider workqueue.MetricsProvider) workqueue.TypedRateLimitingInterface[cache.ObjectName] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: gvk.GroupKind().String(), MetricsProvider: provider})
}
