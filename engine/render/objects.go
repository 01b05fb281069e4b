package render

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/chart"
)

// ObjectsReader is a Reader over a fixed list of objects, such as a file
// given to `loom render --lookups` or a `loom test` case's
// NAME.lookups.yaml. Objects are matched by group, kind, namespace and
// name, whatever version they are written at.
type ObjectsReader struct {
	// Caps, when set, is what a chart's .Capabilities holds (see
	// CapabilitiesReader); nil is Helm SDK's defaults.
	Caps *chart.Capabilities

	objs []*unstructured.Unstructured
	// clusterScoped are the kinds known to have no namespace.
	clusterScoped map[schema.GroupKind]bool
}

// NewObjectsReader returns a Reader over objs. A kind is cluster-scoped
// when it is one of Kubernetes' cluster-scoped built-in kinds, or when an
// object of it in objs has no namespace.
func NewObjectsReader(objs []*unstructured.Unstructured) *ObjectsReader {
	r := &ObjectsReader{objs: objs, clusterScoped: map[schema.GroupKind]bool{}}
	for _, o := range objs {
		if o.GetNamespace() == "" {
			r.clusterScoped[o.GroupVersionKind().GroupKind()] = true
		}
	}
	return r
}

// Get returns a copy of the object, or nil.
func (r *ObjectsReader) Get(gvk schema.GroupVersionKind, namespace, name string) (map[string]any, error) {
	for _, o := range r.objs {
		if o.GroupVersionKind().GroupKind() == gvk.GroupKind() && o.GetNamespace() == namespace && o.GetName() == name {
			return deepCopyMap(o.Object), nil
		}
	}
	return nil, nil
}

// List returns copies of the objects of a kind in namespace, by name.
func (r *ObjectsReader) List(gvk schema.GroupVersionKind, namespace string) ([]map[string]any, error) {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if o.GroupVersionKind().GroupKind() == gvk.GroupKind() && o.GetNamespace() == namespace {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	items := make([]map[string]any, len(out))
	for i, o := range out {
		items[i] = deepCopyMap(o.Object)
	}
	return items, nil
}

// Namespaced reports whether the kind has namespaces.
func (r *ObjectsReader) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	gk := gvk.GroupKind()
	return !r.clusterScoped[gk] && !isBuiltinClusterScoped(gk), nil
}

// isBuiltinClusterScoped reports whether gk is one of Kubernetes'
// cluster-scoped built-in kinds (the list inject.go keeps).
func isBuiltinClusterScoped(gk schema.GroupKind) bool {
	group, ok := clusterScoped[gk.Kind]
	return ok && group == gk.Group
}

// Capabilities is r.Caps (nil: Helm's defaults).
func (r *ObjectsReader) Capabilities() (*chart.Capabilities, error) { return r.Caps, nil }
