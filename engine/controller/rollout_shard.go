package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/rollout"
)

// deciderUID is the key whose bucket decides a set's rollout on sharded
// replicas: the replica that holds it is the one decider; the others
// follow the TemplateSet's status, the one source of truth.
func (r *rollouts) deciderUID() types.UID {
	return types.UID("loom.dev/templateset/" + r.name)
}

// follow publishes the state the decider last wrote in the TemplateSet,
// writing nothing. Until the decider has written one, this replica's
// parents wait for it (setFor).
func (r *rollouts) follow(ctx context.Context, folder *render.Set) error {
	c := r.c
	obj, ok, _ := r.informer.GetStore().GetByKey(r.name)
	if !ok {
		r.after = 2 * time.Second
		return nil
	}
	ts := obj.(*unstructured.Unstructured)
	if err := sameSet(ts, folder); err != nil {
		return err
	}
	s, _, err := rollout.FromObject(ts)
	if err != nil {
		return err
	}
	if s.StableRevision == "" {
		r.after = 2 * time.Second
		return nil
	}
	sets, err := r.load(ctx, folder, s, false)
	if err != nil {
		return err
	}
	r.after = 0
	_, objs := r.parents()
	old := r.view.Swap(&rolloutView{state: s, sets: sets})
	for _, p := range objs {
		k := rollout.Key(string(p.GetUID()), isCanary(p))
		if old == nil || old.state.TargetOf(k) != s.TargetOf(k) {
			c.queue.Add(cache.NewObjectName(p.GetNamespace(), p.GetName()))
		}
	}
	return nil
}

// allParents reads every parent of the kind from the API server, a page
// at a time, and keeps only what Decide needs of each: the decider of a
// sharded rollout decides over the parents of every replica, and its
// cache holds only its own.
func (r *rollouts) allParents(ctx context.Context) ([]rollout.Parent, error) {
	c := r.c
	lw := c.m.strip.ListWatch(c.gvr, c.m.opts.Namespace, nil)
	var out []rollout.Parent
	opts := metav1.ListOptions{Limit: 500}
	for {
		lctx, cancel := context.WithTimeout(ctx, c.m.opts.ReconcileTimeout)
		obj, err := lw.ListWithContextFunc(lctx, opts)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list %s for the rollout of %s: %w", c.gvr.Resource, r.name, err)
		}
		l, ok := obj.(*packwatch.List)
		if !ok {
			return nil, fmt.Errorf("list %s for the rollout of %s: unexpected %T", c.gvr.Resource, r.name, obj)
		}
		for _, p := range l.Items {
			if u, ok := packwatch.Unpack(p); ok && u.GetDeletionTimestamp() == nil {
				out = append(out, rolloutParent(c.previous(u)))
			}
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}
