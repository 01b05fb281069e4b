package crdinstall

// What the Manager's CRD watch keeps of each CRD, and which of its
// changes make it refresh discovery.

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// ServingChanged reports whether an update changed what is served: the
// spec or the Established condition. Status-only churn is ignored.
func ServingChanged(old, cur any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	n, ok2 := cur.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return true
	}
	return o.GetGeneration() != n.GetGeneration() || Established(o) != Established(n)
}

// Slim keeps of a CRD only what Loom reads (its name, generation and
// conditions) before it enters the Manager's CRD cache (an informer's
// transform): CRD schemas can be hundreds of
// kilobytes each, and a cluster may have hundreds of CRDs.
func Slim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	slim := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}}
	slim.SetName(u.GetName())
	slim.SetUID(u.GetUID())
	slim.SetResourceVersion(u.GetResourceVersion())
	slim.SetGeneration(u.GetGeneration())
	if conds, found, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); found {
		_ = unstructured.SetNestedSlice(slim.Object, conds, "status", "conditions")
	}
	return slim, nil
}
