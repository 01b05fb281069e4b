package main

import (
	"context"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
)

// liveReader answers templates' lookups from the API server, for `loom
// diff`: what the controller's caches would hold, read once per lookup.
// Kinds are mapped to resources, and their scope found, through the
// RESTMapper of the cluster the parents are in: lookups stay there.
type liveReader struct {
	ctx context.Context
	p   *place
}

var _ render.Reader = (*liveReader)(nil)

// Get returns the object, or nil when there is none.
func (r *liveReader) Get(gvk schema.GroupVersionKind, namespace, name string) (map[string]any, error) {
	obj, err := live(r.ctx, r.p, gvk, object.Ref{GroupKind: gvk.GroupKind(), Namespace: namespace, Name: name})
	if err != nil || obj == nil {
		return nil, err
	}
	return obj.Object, nil
}

// List returns the objects of a kind in namespace, by name.
func (r *liveReader) List(gvk schema.GroupVersionKind, namespace string) ([]map[string]any, error) {
	gvr, _, err := r.p.applier.Resource(gvk)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	list, err := r.p.client.Resource(gvr).Namespace(namespace).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list %s in %q: %w", gvr.Resource, namespace, err)
	}
	items := make([]map[string]any, len(list.Items))
	for i := range list.Items {
		items[i] = list.Items[i].Object
	}
	sort.Slice(items, func(i, j int) bool { return name(items[i]) < name(items[j]) })
	return items, nil
}

// Namespaced reports whether the kind is namespaced, by its REST mapping.
func (r *liveReader) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	_, namespaced, err := r.p.applier.Resource(gvk)
	return namespaced, err
}

// name is an object's metadata.name.
func name(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	n, _ := meta["name"].(string)
	return n
}
