package render

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectsReader is a Reader over a fixed list of objects, such as a file
// given to `loom render --lookups` or a `loom test` case's
// NAME.lookups.yaml. Objects are matched by group, kind, namespace and
// name, whatever version they are written at.
type ObjectsReader struct {
	objs []*unstructured.Unstructured
	// clusterScoped are the kinds known to have no namespace.
	clusterScoped map[schema.GroupKind]bool
}

// NewObjectsReader returns a Reader over objs. A kind is cluster-scoped
// when it is one of Kubernetes' cluster-scoped built-in kinds, or when an
// object of it in objs has no namespace.
func NewObjectsReader(objs []*unstructured.Unstructured) *ObjectsReader {
	r := &ObjectsReader{objs: objs, clusterScoped: map[schema.GroupKind]bool{}}
	for _, gk := range builtinClusterScoped {
		r.clusterScoped[gk] = true
	}
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
			return copyJSON(o.Object), nil
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
		items[i] = copyJSON(o.Object)
	}
	return items, nil
}

// Namespaced reports whether the kind has namespaces.
func (r *ObjectsReader) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	return !r.clusterScoped[gvk.GroupKind()], nil
}

// builtinClusterScoped are Kubernetes' cluster-scoped built-in kinds that
// templates are likely to look up.
var builtinClusterScoped = []schema.GroupKind{
	{Kind: "Namespace"}, {Kind: "Node"}, {Kind: "PersistentVolume"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
	{Group: "storage.k8s.io", Kind: "StorageClass"},
	{Group: "networking.k8s.io", Kind: "IngressClass"},
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"},
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"},
}
