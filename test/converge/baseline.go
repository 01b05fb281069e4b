package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/loom-operator/loom/engine/render"
)

// baselineManager is the baseline's server-side apply field manager.
const baselineManager = "baseline"

// childResources maps the kinds the MyResource templates render to their
// resources, so that the baseline needs no discovery.
var childResources = map[schema.GroupVersionKind]schema.GroupVersionResource{
	{Version: "v1", Kind: "ConfigMap"}:                 {Version: "v1", Resource: "configmaps"},
	{Version: "v1", Kind: "Service"}:                   {Version: "v1", Resource: "services"},
	{Group: "apps", Version: "v1", Kind: "Deployment"}: deploymentGVR,
}

// baseline sends the minimal writes for converging a parent: one
// server-side apply per child, then one status apply. Everything it sends
// is prepared before the clock starts; in the clock it only fills in the
// parent's UID and generation.
type baseline struct {
	client dynamic.Interface
	// children are the rendered children of each parent, by parent name.
	children map[string][]*unstructured.Unstructured
	// lastWrite is when the last status write returned.
	mu        sync.Mutex
	lastWrite time.Time
}

// prepare renders the children of every parent with the same templates
// Loom uses, and checks that the baseline knows each child's resource.
func (b *baseline) prepare(set *render.Set, parents []*unstructured.Unstructured) error {
	if b.children == nil {
		b.children = make(map[string][]*unstructured.Unstructured, len(parents))
	}
	for _, p := range parents {
		kids, err := set.Render(p)
		if err != nil {
			return fmt.Errorf("render children of %s: %w", p.GetName(), err)
		}
		for _, k := range kids {
			if _, ok := childResources[k.GroupVersionKind()]; !ok {
				return fmt.Errorf("render children of %s: the baseline does not know kind %s", p.GetName(), k.GroupVersionKind())
			}
		}
		b.children[p.GetName()] = kids
	}
	return nil
}

// run converges each parent that arrives on in, workers at a time, until
// in is closed.
func (b *baseline) run(ctx context.Context, in <-chan *unstructured.Unstructured, workers int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range in {
				if ctx.Err() != nil {
					continue // drain, so the creator never blocks
				}
				if err := b.converge(ctx, p); err != nil {
					cancel(err)
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// converge applies the parent's three children, then its status.
func (b *baseline) converge(ctx context.Context, parent *unstructured.Unstructured) error {
	kids := b.children[parent.GetName()]
	for _, k := range kids {
		refs, _ := k.Object["metadata"].(map[string]any)["ownerReferences"].([]any)
		for _, r := range refs {
			r.(map[string]any)["uid"] = string(parent.GetUID())
		}
		gvr := childResources[k.GroupVersionKind()]
		_, err := b.client.Resource(gvr).Namespace(k.GetNamespace()).Apply(ctx, k.GetName(), k,
			metav1.ApplyOptions{FieldManager: baselineManager, Force: true})
		if err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", k.GetKind(), k.GetNamespace(), k.GetName(), err)
		}
	}
	st := baselineStatus(parent, kids)
	_, err := b.client.Resource(myResourceGVR).Namespace(parent.GetNamespace()).ApplyStatus(ctx, parent.GetName(), st,
		metav1.ApplyOptions{FieldManager: baselineManager, Force: true})
	if err != nil {
		return fmt.Errorf("write status of MyResource %s/%s: %w", parent.GetNamespace(), parent.GetName(), err)
	}
	b.mu.Lock()
	b.lastWrite = time.Now()
	b.mu.Unlock()
	return nil
}

// baselineStatus is a status of the shape Loom's first write has:
// observedGeneration, a Ready=False condition, and one entry per child,
// which is what t1's test looks for.
func baselineStatus(parent *unstructured.Unstructured, kids []*unstructured.Unstructured) *unstructured.Unstructured {
	children := make([]any, 0, len(kids))
	for _, k := range kids {
		children = append(children, map[string]any{
			"apiVersion": k.GetAPIVersion(), "kind": k.GetKind(), "name": k.GetName(),
			"ready": false, "status": "InProgress",
		})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": parent.GetAPIVersion(),
		"kind":       parent.GetKind(),
		"metadata":   map[string]any{"name": parent.GetName(), "namespace": parent.GetNamespace()},
		"status": map[string]any{
			"observedGeneration": parent.GetGeneration(),
			"state":              "Building",
			"children":           children,
			"conditions": []any{map[string]any{
				"type": "Ready", "status": "False", "reason": "ChildrenNotReady",
				"message":            "waiting for children",
				"observedGeneration": parent.GetGeneration(),
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			}},
		},
	}}
}
