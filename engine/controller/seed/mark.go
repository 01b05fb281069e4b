package seed

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// WriteMark writes, on parent (of resource parents), the AnnotationSeed
// naming fingerprint fp, with a merge patch conditional on the parent's
// UID, as fieldManager. The patch names no version's fields, so parents
// may be of any version of their kind.
func (s *Store) WriteMark(ctx context.Context, parents schema.GroupVersionResource, fieldManager string, parent *unstructured.Unstructured, fp string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": string(parent.GetUID()), "annotations": map[string]any{AnnotationSeed: Mark(parent, fp)},
	}})
	if err != nil {
		return err
	}
	_, err = s.client.Resource(parents).Namespace(parent.GetNamespace()).Patch(ctx, parent.GetName(), types.MergePatchType, body,
		metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return fmt.Errorf("write %s on %s %s/%s: %w", AnnotationSeed, parent.GetKind(), parent.GetNamespace(), parent.GetName(), err)
	}
	return nil
}
