package apply

import (
	"context"
	"fmt"

	"github.com/loom-operator/loom/engine/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DryRun returns the object the API server would store if Apply sent
// desired now: the same server-side apply (field manager, force, hash
// annotation) with dryRun=All, so admission, defaulting and validation all
// run and nothing is written. Ignored fields (object.AnnotationDriftIgnore)
// that Loom no longer owns are left out, as Apply leaves them out, so the
// other writer's values show unchanged; the fields of a child in drift
// mode warn are sent, so the drift shows as what a repair would change.
func (a *Applier) DryRun(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	desired = prepare(desired)
	ref := object.RefOf(desired)
	hash, err := Hash(desired)
	if err != nil {
		return nil, fmt.Errorf("hash %s: %w", ref, err)
	}
	gvr, err := a.target(desired.GroupVersionKind(), ref.Namespace)
	if err != nil {
		return nil, fmt.Errorf("dry-run apply %s: %w", ref, err)
	}
	if desired, err = a.previewed(ctx, gvr, desired); err != nil {
		return nil, fmt.Errorf("dry-run apply %s: %w", ref, err)
	}
	obj, err := a.client.Resource(gvr).Namespace(ref.Namespace).Apply(ctx, ref.Name, withHash(desired, hash),
		metav1.ApplyOptions{FieldManager: a.manager, Force: true, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, fmt.Errorf("dry-run apply %s: %w", ref, err)
	}
	return obj, nil
}
