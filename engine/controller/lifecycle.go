package controller

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/render"
)

// This file is what the Manager calls on a Controller: it makes one per
// template set (NewController), runs it (Run), swaps its set on a reload (UseSet),
// passes it the cluster's news (KindsChanged, Resharded, OnChild, Enqueue,
// EnqueueUnserved, EnqueueAll) and asks it how it does (NotStarted,
// Stalled, AwaitsKind).

// NewController returns the controller of set's parent kind, stopped when ctx is
// done or Cancel is called. sh is what it uses of the Manager's.
func NewController(ctx context.Context, sh *Shared, set *render.Set) *Controller {
	c := newParentController(sh, set)
	c.ctx, c.cancel = context.WithCancel(ctx)
	return c
}

// Run runs c until its context is done. It first waits for prev, the
// controller c replaces (nil for none), to finish its in-flight
// reconciles, so that two controllers never reconcile one parent at once.
// It starts c once its parent kind is served, trying again each time
// KindsChanged wakes it. Once cancelled, it drains c's in-flight
// reconciles, calls stopped, and lets a controller that replaces c start.
func (c *Controller) Run(workers int, prev *Controller, stopped func()) {
	defer func() {
		stopped()
		c.sh.Metrics.Parents.Untrack(c)
		close(c.done)
	}()
	logger := klog.FromContext(c.ctx).WithValues("kind", c.gvk.Kind)
	if prev != nil {
		logger.V(2).Info("Waiting for the previous controller of this kind to drain")
		<-prev.done
	}
	for {
		err := c.start(c.ctx, workers)
		if err == nil {
			break
		}
		c.startErr.Store(&startResult{err})
		if c.ctx.Err() != nil {
			return // removed or replaced before it could start
		}
		if errors.Is(err, errNotServed) {
			logger.Info("Parent kind is not served yet; waiting for its CRD", "apiVersion", c.gvk.GroupVersion().String())
		} else {
			logger.Error(err, "Could not start controller; retrying when CRDs change")
		}
		c.awaiting.Store(true)
		c.sh.KindAwaited()
		select {
		case <-c.kick:
			c.awaiting.Store(false)
		case <-c.ctx.Done():
			return
		}
	}
	<-c.ctx.Done()
	c.drain()
}

// Cancel stops the controller; Run returns once its in-flight reconciles
// have finished.
func (c *Controller) Cancel() { c.cancel() }

// GVK is the parent kind the controller reconciles, in the version it
// reads parents in: the storage version (pipeline.StorageGVK).
func (c *Controller) GVK() schema.GroupVersionKind { return c.gvk }

// Set is the template set the controller renders.
func (c *Controller) Set() *render.Set { return c.set.Load() }

// UseSet makes s, a new version of the controller's set (same parent
// kind), the one it renders; a rollout decides which parents render it.
// The parents are not enqueued: EnqueueAll does that.
func (c *Controller) UseSet(s *render.Set) {
	c.set.Store(s)
	if c.rollouts != nil {
		if s.Config.Rollout != nil && c.running.Load() {
			c.rollouts.Enable(c.ctx)
		}
		c.rollouts.Wake() // a new revision: the rollout decides who renders it
	}
}

// SetSchema sets the SchemaAccepted condition of the set's TemplateSet.
func (c *Controller) SetSchema(cond metav1.Condition) {
	if c.rollouts != nil {
		c.rollouts.SetSchema(cond)
	}
}

// Running reports whether the controller has started its workers.
func (c *Controller) Running() bool { return c.running.Load() }

// Resource is the parent kind's resource, and whether the controller runs
// (before it does, the resource is not known).
func (c *Controller) Resource() (schema.GroupVersionResource, bool) {
	if !c.running.Load() {
		return schema.GroupVersionResource{}, false // running orders the read of c.gvr after start's write
	}
	return c.gvr, true
}

// Enqueue reconciles one parent again, if the controller runs.
func (c *Controller) Enqueue(name cache.ObjectName) {
	if c.running.Load() {
		c.queue.Add(name)
	}
}

// KindsChanged follows a change of the CRDs: a running controller
// re-reconciles the parents that wait for a child kind or whose CRD had
// no status subresource, and its rollout retries; one that waits for its
// parent kind tries to start again.
func (c *Controller) KindsChanged() {
	if c.running.Load() {
		c.EnqueueUnserved()
		c.retryStatus()
		if c.rollouts != nil {
			c.rollouts.RetryNow() // the rollout CRDs may be served now
		}
		return
	}
	select {
	case c.kick <- struct{}{}: // wakes it if it waits for its kind
	default:
	}
}

// Resharded follows a change of the buckets this replica holds: the
// controller lists the parents it holds now, and its rollout looks again.
func (c *Controller) Resharded() {
	if c.running.Load() {
		c.kickReshard()
	}
	if c.rollouts != nil {
		c.rollouts.Wake()
	}
}

// progress is when a controller's workers last moved: took a parent off
// the queue, or finished reconciling one. Its zero value is the zero time.
type progress struct{ at atomic.Int64 } // Unix nanoseconds; 0 for never

func (p *progress) mark(now time.Time) { p.at.Store(now.UnixNano()) }

func (p *progress) last() time.Time {
	if n := p.at.Load(); n != 0 {
		return time.Unix(0, n).UTC()
	}
	return time.Time{}
}

// startResult is why a controller's last start failed.
type startResult struct{ err error }

// NotStarted says why the controller has not started, or nil when it
// runs or waits for its parent kind to be served (a kind whose CRD may
// come much later, or never, holds no readiness back).
func (c *Controller) NotStarted() error {
	if c.running.Load() {
		return nil
	}
	r := c.startErr.Load()
	if r == nil {
		return errors.New("its parent cache has not synced yet")
	}
	if errors.Is(r.err, errNotServed) {
		return nil
	}
	return r.err
}

// Stalled says whether the workers are wedged: parents are queued (ready
// to be reconciled now: those waiting out a backoff are not counted) and
// the workers have neither taken nor finished a reconcile for longer than
// bound, at now.
func (c *Controller) Stalled(now time.Time, bound time.Duration) error {
	if !c.running.Load() {
		return nil // running orders the read of c.queue after start's write
	}
	n := c.queue.Len()
	if since := now.Sub(c.progress.last()); n > 0 && since > bound {
		return fmt.Errorf("the workers of %s have made no progress for %s with %d parents queued (the bound is %s)",
			c.gvk.GroupKind(), since, n, bound)
	}
	return nil
}
