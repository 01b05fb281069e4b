package controller

import (
	"context"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// watchCRDs refreshes discovery whenever a CRD is added, changes its
// served versions or becomes established, or is deleted. Events are
// coalesced: a burst of CRD changes causes one refresh.
func (m *Manager) watchCRDs(ctx context.Context) {
	kick := make(chan struct{}, 1)
	notify := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(m.client, crdGVR, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(slimCRD)
	var synced atomic.Bool
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			if synced.Load() {
				notify()
			}
		},
		UpdateFunc: func(old, cur any) {
			if crdServingChanged(old, cur) {
				notify()
			}
		},
		DeleteFunc: func(any) { notify() },
	})
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	synced.Store(true)
	m.mu.Lock()
	m.crds = inf.GetStore()
	m.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
			// Let the API server publish the new kind in discovery.
			time.Sleep(200 * time.Millisecond)
			klog.FromContext(ctx).V(2).Info("CRDs changed; refreshing discovery")
			m.kindsChanged()
		}
	}
}

// crdServingChanged reports whether an update changed what is served: the
// spec or the Established condition. Status-only churn is ignored.
func crdServingChanged(old, cur any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	n, ok2 := cur.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return true
	}
	return o.GetGeneration() != n.GetGeneration() || established(o) != established(n)
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" {
			return m["status"] == "True"
		}
	}
	return false
}

// slimCRD keeps of a CRD only what Loom reads (its name, generation and
// conditions) before it enters the cache: CRD schemas can be hundreds of
// kilobytes each, and a cluster may have hundreds of CRDs.
func slimCRD(obj any) (any, error) {
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
