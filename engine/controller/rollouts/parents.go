package rollouts

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/rollout"
)

// Parent is one parent as its controller hands it to the rollout (Host):
// the object, with the newest status Loom knows of, and what its Ready
// and Degraded conditions say, which the controller reads.
type Parent struct {
	Object          *unstructured.Unstructured
	Ready, Degraded Condition
}

// Condition is what one condition of a parent's status says, as Decide
// needs it; the zero Condition is a condition the status does not hold.
type Condition struct {
	Status, Message string
}

// parents is what Decide needs of each parent the host caches, and those
// parents by namespace/name.
func (r *Rollout) parents() ([]rollout.Parent, map[string]*unstructured.Unstructured) {
	list := r.host.Parents()
	out := make([]rollout.Parent, 0, len(list))
	objs := make(map[string]*unstructured.Unstructured, len(list))
	for _, p := range list {
		objs[p.Object.GetNamespace()+"/"+p.Object.GetName()] = p.Object
		out = append(out, rolloutParent(p))
	}
	return out, objs
}

// allParents is what Decide needs of every parent of the kind, which the
// host reads from the API server.
func (r *Rollout) allParents(ctx context.Context) ([]rollout.Parent, error) {
	var out []rollout.Parent
	err := r.host.AllParents(ctx, func(p Parent) { out = append(out, rolloutParent(p)) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// rolloutParent is what Decide needs of one parent.
func rolloutParent(parent Parent) rollout.Parent {
	p := parent.Object
	st, _ := p.Object["status"].(map[string]any)
	gen, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
	current := gen == p.GetGeneration()
	rev, _ := st["templateRevision"].(string)
	ready, degraded := parent.Ready, parent.Degraded
	msg := ready.Message
	if degraded.Status == "True" {
		msg = degraded.Message
	}
	return rollout.Parent{Name: p.GetNamespace() + "/" + p.GetName(), UID: string(p.GetUID()), Canary: IsCanary(p), Revision: rev,
		Ready: current && ready.Status == "True", Degraded: current && degraded.Status == "True", Message: msg}
}
