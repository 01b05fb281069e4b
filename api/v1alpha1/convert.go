package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TemplateSetFromUnstructured reads obj as a TemplateSet. An object of
// another group or kind, or one whose fields do not have the types of the
// CRD, is an error naming it. An object with no apiVersion and kind is
// taken for a TemplateSet.
func TemplateSetFromUnstructured(obj *unstructured.Unstructured) (*TemplateSet, error) {
	ts := &TemplateSet{}
	if err := fromUnstructured(obj, TemplateSetKind, ts); err != nil {
		return nil, err
	}
	return ts, nil
}

// TemplateRevisionFromUnstructured reads obj as a TemplateRevision, as
// TemplateSetFromUnstructured reads a TemplateSet.
func TemplateRevisionFromUnstructured(obj *unstructured.Unstructured) (*TemplateRevision, error) {
	rev := &TemplateRevision{}
	if err := fromUnstructured(obj, TemplateRevisionKind, rev); err != nil {
		return nil, err
	}
	return rev, nil
}

// ToUnstructured is ts as an unstructured object, with its apiVersion and
// kind set.
func (ts *TemplateSet) ToUnstructured() (*unstructured.Unstructured, error) {
	return toUnstructured(ts, TemplateSetKind, ts.Name)
}

// ToUnstructured is rev as an unstructured object, with its apiVersion
// and kind set.
func (rev *TemplateRevision) ToUnstructured() (*unstructured.Unstructured, error) {
	return toUnstructured(rev, TemplateRevisionKind, rev.Name)
}

func fromUnstructured(obj *unstructured.Unstructured, kind string, into any) error {
	gvk := obj.GroupVersionKind()
	if !gvk.Empty() && (gvk.Group != Group || gvk.Kind != kind) {
		return fmt.Errorf("%s %s is not a %s.%s", gvk.Kind, obj.GetName(), kind, Group)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("read %s %s: %w", kind, obj.GetName(), err)
	}
	return nil
}

func toUnstructured(obj any, kind, name string) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s %s: %w", kind, name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(GroupVersion.WithKind(kind))
	// A zero metav1.Time writes null: leave it out, as the API server
	// does for an object it has not created yet.
	if meta, ok := m["metadata"].(map[string]any); ok {
		if ct, ok := meta["creationTimestamp"]; ok && ct == nil {
			delete(meta, "creationTimestamp")
		}
	}
	return u, nil
}
