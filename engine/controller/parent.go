package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/finalizer"
	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/controller/rollouts"
	"github.com/loom-operator/loom/engine/controller/statuswriter"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/shard"
	"github.com/loom-operator/loom/engine/status"
)

// Controller reconciles the objects of one parent kind, following
// the shape of kubernetes/sample-controller: event handlers only enqueue,
// workers drain a rate-limited queue keyed by namespace/name. It reads and
// writes parents in the version the API server stores them in (gvk), and
// converts each to the hub its templates read.
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
	c := &Controller{sh: sh, gvk: pipeline.StorageGVK(set),
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
	Write(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, hub statuswriter.Hub, in status.Input) error
	Previous(parent *unstructured.Unstructured) *unstructured.Unstructured
	CaughtUp(uid types.UID, rv string)
	Forget(uid types.UID)
	RetryNoStatus() map[types.UID]bool
	RecordDrift(ctx context.Context, parent *unstructured.Unstructured, results object.ChangeSet)
}

// newStatusWriter returns the status writer of c, which reads c's parent
// cache.
func newStatusWriter(c *Controller) *statuswriter.Writer {
	sh := c.sh
	return statuswriter.New(statuswriter.Config{Client: sh.Client, GVK: c.gvk,
		Resource:     func() schema.GroupVersionResource { return c.gvr },
		FieldManager: sh.FieldManager, Clock: sh.Clock, Recorder: sh.Recorder, Writes: sh.Metrics.StatusWrites, DriftRepairs: sh.Metrics.DriftRepairs, DriftWarnings: sh.Metrics.DriftWarnings,
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
