package rollouts

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/rollout"
)

// deciderUID is the key whose bucket decides a set's rollout on sharded
// replicas: the replica that holds it is the one decider; the others
// follow the TemplateSet's status, the one source of truth.
func (r *Rollout) deciderUID() types.UID {
	return types.UID("loom.dev/templateset/" + r.name)
}

// follow publishes the state the decider last wrote in the TemplateSet,
// writing nothing. Until the decider has written one, this replica's
// parents wait for it (SetFor).
func (r *Rollout) follow(ctx context.Context, folder *render.Set) error {
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
		k := rollout.Key(string(p.GetUID()), IsCanary(p))
		if old == nil || old.state.TargetOf(k) != s.TargetOf(k) {
			r.host.Enqueue(cache.NewObjectName(p.GetNamespace(), p.GetName()))
		}
	}
	return nil
}
