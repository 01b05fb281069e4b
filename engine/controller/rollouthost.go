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
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/rollout"
)

// newRollout returns the rollout of c's set (engine/controller/rollouts),
// which c's start, reloads and reconciles drive.
func newRollout(c *Controller) *rollouts.Rollout {
	sh := c.sh
	return rollouts.New(rollouts.Config{Client: sh.Client, Resolver: sh.Applier, Recorder: sh.Recorder, Metrics: sh.Metrics.rollout,
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

func (h rolloutHost) Parents() ([]rollout.Parent, map[string]*unstructured.Unstructured) {
	return h.parentsOf(h.c.store().List())
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
	return withParentUID(ctx, uid), leave, true
}

// parentsOf is Parents of the cached (packed) parents in list.
func (h rolloutHost) parentsOf(list []any) ([]rollout.Parent, map[string]*unstructured.Unstructured) {
	out := make([]rollout.Parent, 0, len(list))
	objs := make(map[string]*unstructured.Unstructured, len(list))
	for _, o := range list {
		p, ok := packwatch.Unpack(o)
		if !ok || p.GetDeletionTimestamp() != nil {
			continue
		}
		p = h.c.status.Previous(p)
		objs[p.GetNamespace()+"/"+p.GetName()] = p
		out = append(out, rolloutParent(p))
	}
	return out, objs
}

// AllParents reads every parent of the kind from the API server, a page
// at a time, and keeps only what Decide needs of each: the decider of a
// sharded rollout decides over the parents of every replica, and its
// cache holds only its own.
func (h rolloutHost) AllParents(ctx context.Context) ([]rollout.Parent, error) {
	c := h.c
	lw := c.sh.Parents.ListWatch(c.gvr, c.sh.Namespace, nil)
	var out []rollout.Parent
	opts := metav1.ListOptions{Limit: 500}
	for {
		lctx, cancel := context.WithTimeout(ctx, c.sh.ReconcileTimeout)
		obj, err := lw.ListWithContextFunc(lctx, opts)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list %s for the rollout of %s: %w", c.gvr.Resource, c.rollouts.Name(), err)
		}
		l, ok := obj.(*packwatch.List)
		if !ok {
			return nil, fmt.Errorf("list %s for the rollout of %s: unexpected %T", c.gvr.Resource, c.rollouts.Name(), obj)
		}
		for _, p := range l.Items {
			if u, ok := packwatch.Unpack(p); ok && u.GetDeletionTimestamp() == nil {
				out = append(out, rolloutParent(c.status.Previous(u)))
			}
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// rolloutParent is what Decide needs of one parent.
func rolloutParent(p *unstructured.Unstructured) rollout.Parent {
	st, _ := p.Object["status"].(map[string]any)
	gen, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
	current := gen == p.GetGeneration()
	rev, _ := st["templateRevision"].(string)
	ready, degraded := statuswriter.ConditionOf(st, "Ready"), statuswriter.ConditionOf(st, "Degraded")
	msg := ready.Message
	if degraded.Status == "True" {
		msg = degraded.Message
	}
	return rollout.Parent{Name: p.GetNamespace() + "/" + p.GetName(), UID: string(p.GetUID()), Canary: rollouts.IsCanary(p), Revision: rev,
		Ready: current && ready.Status == "True", Degraded: current && degraded.Status == "True", Message: msg}
}
