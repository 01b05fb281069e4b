package controller

// The workers that drain a parent controller's queue.

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

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
