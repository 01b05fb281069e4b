package finalizer

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/render/kinds"
)

// Whoever may write a parent may write its annotations too, the guards'
// lists of kinds included: Loom lists only the kinds of those lists that
// the parent's set declares (declaredKinds), so that a parent cannot make
// Loom list a kind cluster-wide, or one Loom may not list, which would
// hold its deletion forever.

// declaredKinds returns the kinds g's annotation may name for a parent of
// set: the kinds loom.yaml declares in clusterScoped, for the
// cluster-children finalizer; the kinds the templates name, for the orphan
// finalizer. It is empty when a template computes a kind (the set's kinds
// cannot be known; Loom then lists only the kinds of the children it
// caches).
func declaredKinds(set *render.Set, g *guard) map[schema.GroupKind]bool {
	if g == clusterGuard {
		return set.Config.ClusterScopedKinds()
	}
	found, err := kinds.ScanKinds(set.ChildTexts())
	if err != nil {
		return nil
	}
	out := make(map[schema.GroupKind]bool, len(found))
	for _, k := range found {
		out[k.GroupKind] = true
	}
	return out
}

// guardedKinds splits the kinds g's annotation on parent lists into those
// declared holds (kept) and the others (ignored).
func guardedKinds(parent *unstructured.Unstructured, g *guard, declared map[schema.GroupKind]bool) (kept, ignored []schema.GroupKind) {
	for _, gk := range object.ParseGroupKinds(parent.GetAnnotations()[g.annotation]) {
		if declared[gk] {
			kept = append(kept, gk)
		} else {
			ignored = append(ignored, gk)
		}
	}
	return kept, ignored
}
