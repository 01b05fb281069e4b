package offline

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
)

// ReadLookups reads a YAML stream of objects for templates' lookups to
// find, such as a case's NAME.lookups.yaml or the file given to `loom
// render --lookups`. A List (what `kubectl get -o yaml` prints for several
// objects) stands for its items.
//
// An object that names no namespace is in namespace, as a parent is,
// unless its kind is one of Kubernetes' cluster-scoped built-in kinds or
// it says `namespace: ""`, which marks its kind cluster-scoped (for a
// custom cluster-scoped kind).
//
// A lookup of a kind that loom.yaml does not declare finds only the
// parent's own children: objects whose controller ownerReference has the
// parent's metadata.uid, or, for a parent with none, the objects as they
// are.
func ReadLookups(r io.Reader, namespace string) (*render.ObjectsReader, error) {
	docs, err := render.ReadParents(r)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for i, o := range docs {
		if strings.HasSuffix(o.GetKind(), "List") && o.IsList() {
			if err := o.EachListItem(func(item runtime.Object) error {
				objs = append(objs, item.(*unstructured.Unstructured))
				return nil
			}); err != nil {
				return nil, fmt.Errorf("document %d: %w", i+1, err)
			}
			continue
		}
		objs = append(objs, o)
	}
	for i, o := range objs {
		if o.GetKind() == "" || o.GetName() == "" {
			return nil, fmt.Errorf("object %d: kind and metadata.name are required", i+1)
		}
		meta, _ := o.Object["metadata"].(map[string]any)
		if _, said := meta["namespace"]; !said && !render.IsClusterScoped(o.GetAPIVersion(), o.GetKind()) {
			o.SetNamespace(namespace)
		}
	}
	return render.NewObjectsReader(objs), nil
}

// Rendered is what RenderParents made.
type Rendered struct {
	// Children are the children the controller would apply now.
	Children []*unstructured.Unstructured
	// Sources holds each child's template file (render.Output.Sources).
	Sources []string
	// Held says, one line each, what is not applied now and why (see
	// pipeline.Describe).
	Held []string
}

// RenderParents renders each parent with set, answering lookups from
// reader (nil: they find nothing), with the registered workload clusters
// clusters (see Clusters), and decides which children are applied now, by
// the controller's own pipeline (engine/pipeline). Parents that name no
// namespace get namespace. A render error, or a file that failed
// although everything it looked up is ready, is an error naming the
// parent.
//
// Each parent's render stops after timeout (0: no limit), as the
// controller's stops at its reconcile timeout: a template that loops for
// ever fails at the loop's line (render.ErrDeadline).
func RenderParents(set *render.Set, parents []*unstructured.Unstructured, reader render.Reader, clusters []cluster.Registration, namespace string, timeout time.Duration) (Rendered, error) {
	o := renderOptions(timeout)
	o.Clusters = clusters
	var out Rendered
	for _, p := range parents {
		if p.GetNamespace() == "" {
			p.SetNamespace(namespace)
		}
		name := fmt.Sprintf("%s %s/%s", p.GetKind(), p.GetNamespace(), p.GetName())
		planned, err := pipeline.Plan(context.Background(), set, p, reader, o)
		if err != nil {
			return Rendered{}, fmt.Errorf("render %s: %w", name, err)
		}
		rendered, plan := planned.Output, planned.Plan
		source := make(map[*unstructured.Unstructured]string, len(rendered.Children))
		for i, c := range rendered.Children {
			source[c] = rendered.Sources[i]
		}
		for _, c := range plan.Apply {
			out.Children = append(out.Children, c)
			out.Sources = append(out.Sources, source[c])
		}
		out.Held = append(out.Held, pipeline.Describe(plan, name)...)
	}
	return out, nil
}

// DefaultTimeout is how long `loom render` and `loom test` let one
// parent's render run (their --timeout).
const DefaultTimeout = 30 * time.Second

// renderOptions stops a parent's render after timeout (0: no limit).
func renderOptions(timeout time.Duration) pipeline.Options {
	if timeout <= 0 {
		return pipeline.Options{}
	}
	return pipeline.Options{Timeout: timeout, TimeoutCause: fmt.Errorf("it ran for %s (--timeout)", timeout)}
}

// CheckParents returns the parents that objs, read from name (a file, or
// "stdin"), hold: a v1 List stands for its items. It is an error naming
// name when there are none, or when an object is not a parent of set (of
// another kind, of a version the set does not serve, or not a Kubernetes
// object at all), rather than the render's own refusal, which can only
// name loom.yaml. A parent of a set that serves several versions may be in
// any of them: Admission converts it to the hub.
func CheckParents(set *render.Set, name string, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var parents []*unstructured.Unstructured
	for _, o := range objs {
		if strings.HasSuffix(o.GetKind(), "List") && o.IsList() {
			if err := o.EachListItem(func(item runtime.Object) error {
				parents = append(parents, item.(*unstructured.Unstructured))
				return nil
			}); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			continue
		}
		parents = append(parents, o)
	}
	if len(parents) == 0 {
		return nil, fmt.Errorf("%s holds no objects: give at least one parent", name)
	}
	want := set.ParentGVK()
	wantName := want.GroupVersion().String() + " " + want.Kind
	served := set.Config.VersionNames()
	for i, p := range parents {
		switch gvk := p.GroupVersionKind(); {
		case gvk.Kind == "" && p.GetAPIVersion() == "":
			return nil, fmt.Errorf("%s: object %d is not a Kubernetes object (it has no apiVersion and kind); this set's parent is %s (loom.yaml)", name, i+1, wantName)
		case gvk.GroupKind() == want.GroupKind() && len(served) > 1 && !slices.Contains(served, gvk.Version):
			return nil, fmt.Errorf("%s: object %d is a %s %s (%s), in a version this set does not serve: it serves %s (loom.yaml)", name, i+1, p.GetAPIVersion(), p.GetKind(), p.GetName(), strings.Join(served, ", "))
		case gvk.GroupKind() != want.GroupKind() || len(served) == 1 && gvk != want:
			return nil, fmt.Errorf("%s: object %d is a %s %s (%s), not a parent of this set, whose parent is %s (loom.yaml)", name, i+1, p.GetAPIVersion(), p.GetKind(), p.GetName(), wantName)
		}
	}
	return parents, nil
}
