package controller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/controller/rollouts"
	"github.com/loom-operator/loom/engine/controller/statuswriter"
	"github.com/loom-operator/loom/engine/controller/transport"
	"github.com/loom-operator/loom/engine/render"
)

// newRollout returns the rollout of c's set (engine/controller/rollouts),
// which c's start, reloads and reconciles drive.
func newRollout(c *Controller) *rollouts.Rollout {
	sh := c.sh
	return rollouts.New(rollouts.Config{Client: sh.Client, Resolver: sh.Applier, Recorder: sh.Recorder, Metrics: sh.Metrics.Rollout,
		Clock: sh.Clock, Namespace: sh.Namespace, FieldManager: sh.FieldManager, Timeout: sh.ReconcileTimeout},
		rolloutHost{c})
}

// setFor returns the set and revision a parent renders: the folder's set
// for a set without a rollout policy (revision ""), else its target in the
// rollout's view. A nil set means the rollout's state is not loaded yet.
func (c *Controller) setFor(parent *unstructured.Unstructured) (*render.Set, string) {
	if c.rollouts == nil {
		return c.set.Load(), ""
	}
	return c.rollouts.SetFor(parent)
}

// rolloutHost is the parent controller as its set's rollout sees it
// (rollouts.Host).
type rolloutHost struct{ c *Controller }

func (h rolloutHost) Folder() *render.Set { return h.c.set.Load() }

func (h rolloutHost) Parents() []rollouts.Parent {
	list := h.c.store().List()
	out := make([]rollouts.Parent, 0, len(list))
	for _, o := range list {
		p, ok := packwatch.Unpack(o)
		if !ok || p.GetDeletionTimestamp() != nil {
			continue
		}
		out = append(out, h.parent(p))
	}
	return out
}

func (h rolloutHost) CountParents() int { return len(h.c.store().ListKeys()) }

func (h rolloutHost) Enqueue(name cache.ObjectName) { h.c.queue.Add(name) }

func (h rolloutHost) EnqueueAll() {
	if c := h.c; c.running.Load() {
		for _, k := range c.store().ListKeys() {
			if name, err := cache.ParseObjectName(k); err == nil {
				c.queue.Add(name)
			}
		}
	}
}

func (h rolloutHost) Sharded() bool { return h.c.sh.Shard != nil }

func (h rolloutHost) EnterShard(ctx context.Context, uid types.UID) (context.Context, func(), bool) {
	leave, ok := h.c.sh.Shard.Enter(uid)
	if !ok {
		return ctx, nil, false
	}
	return transport.WithParentUID(ctx, uid), leave, true
}

// AllParents reads every parent of the kind from the API server, a page
// at a time, and hands each to each: the decider of a sharded rollout
// decides over the parents of every replica, and its cache holds only its
// own.
func (h rolloutHost) AllParents(ctx context.Context, each func(rollouts.Parent)) error {
	c := h.c
	lw := c.sh.Parents.ListWatch(c.gvr, c.sh.Namespace, nil)
	opts := metav1.ListOptions{Limit: 500}
	for {
		lctx, cancel := context.WithTimeout(ctx, c.sh.ReconcileTimeout)
		obj, err := lw.ListWithContextFunc(lctx, opts)
		cancel()
		if err != nil {
			return fmt.Errorf("list %s for the rollout of %s: %w", c.gvr.Resource, c.rollouts.Name(), err)
		}
		l, ok := obj.(*packwatch.List)
		if !ok {
			return fmt.Errorf("list %s for the rollout of %s: unexpected %T", c.gvr.Resource, c.rollouts.Name(), obj)
		}
		for _, p := range l.Items {
			if u, ok := packwatch.Unpack(p); ok && u.GetDeletionTimestamp() == nil {
				each(h.parent(u))
			}
		}
		if l.Continue == "" {
			return nil
		}
		opts.Continue = l.Continue
	}
}

// parent is p as the rollout sees it: with the newest status Loom knows
// of, and what its Ready and Degraded conditions say.
func (h rolloutHost) parent(p *unstructured.Unstructured) rollouts.Parent {
	p = h.c.status.Previous(p)
	st, _ := p.Object["status"].(map[string]any)
	ready, degraded := statuswriter.ConditionOf(st, "Ready"), statuswriter.ConditionOf(st, "Degraded")
	return rollouts.Parent{Object: p,
		Ready:    rollouts.Condition{Status: ready.Status, Message: ready.Message},
		Degraded: rollouts.Condition{Status: degraded.Status, Message: degraded.Message}}
}
