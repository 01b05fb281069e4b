package finalizer

// One finalizer guard, two uses: children to keep (orphan.go) and the
// cluster-scoped children of a namespaced parent (clusterchildren.go).
// Each is a finalizer on the parent, with an annotation listing the
// group-kinds of the children it guards, put there before the first such
// child is applied and removed once a fresh list finds none.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
)

// Guards are the two finalizers, and what Loom does when a parent that
// carries them is deleted, for the parents of one kind. A parent
// controller builds one from what it has, and calls Protect before its
// applies, Settle after its prune, and Finalize when the parent is being
// deleted.
type Guards struct {
	// Client patches parents and reads, afresh, namespaces and the
	// guarded children.
	Client dynamic.Interface
	// Parents is the parents' resource, Kind their kind (for messages).
	Parents schema.GroupVersionResource
	Kind    string
	// Mapper maps guarded kinds to their resources.
	Mapper meta.RESTMapper
	// FieldManager is the field manager of the finalizer patches.
	FieldManager string
	// Namespace limits Loom to one namespace; empty means all. A
	// cluster-scoped parent's namespaced children are listed there.
	Namespace string
	// Owned returns the cached children whose controller has uid.
	Owned func(uid types.UID) []*unstructured.Unstructured
	// Set returns the parents' set, whose declared kinds bound the kinds
	// a guard's annotation may name (guardkinds.go).
	Set func() *render.Set
	// Applier returns the applier of the reconcile ctx belongs to.
	Applier func(ctx context.Context) Applier
	// Observe counts what a release or a delete did.
	Observe func(cs object.ChangeSet)
	// Recorder records Events on parents.
	Recorder record.EventRecorder
	// Remote deletes and finds children in workload clusters (remote.go);
	// nil: none.
	Remote Remote
}

// Applier releases and deletes a parent's children, as Loom or as the
// set's ServiceAccount (apply.Applier). It is what the guards use of the
// applier, so that they need not know whom a reconcile acts as.
type Applier interface {
	// Release takes Loom's hands off objs, children of parent, so that
	// they outlive it.
	Release(ctx context.Context, objs []*unstructured.Unstructured, parent types.UID) object.ChangeSet
	// Prune deletes objs, each conditional on its UID.
	Prune(ctx context.Context, objs []*unstructured.Unstructured) object.ChangeSet
	// GiveBack gives Loom's fields in the objects it patched back.
	GiveBack(ctx context.Context, refs []object.Ref) object.ChangeSet
}

// patchOp is one operation of a JSON patch (RFC 6902).
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// guard is a finalizer Loom puts on a parent while some of its children
// need Loom when the parent is deleted, with the annotation that lists
// those children's group-kinds (so that Loom lists exactly those kinds
// then, even after a restart with no cache).
type guard struct {
	finalizer, annotation string
	// name names the finalizer in logs ("orphan"); guarded names the
	// children it guards in errors ("children to keep").
	name, guarded string
	// kinds returns the group-kinds of the guarded children in lists.
	kinds func(lists ...[]*unstructured.Unstructured) []schema.GroupKind
	// guards reports whether o, listed afresh, is a child of parent that
	// the finalizer guards.
	guards func(o, parent *unstructured.Unstructured) bool
}

var (
	// orphanGuard keeps a parent until its children to keep are released.
	orphanGuard = &guard{
		finalizer: object.FinalizerOrphan, annotation: object.AnnotationOrphanKinds,
		name: "orphan", guarded: "children to keep", kinds: orphanKinds,
		guards: func(o, parent *unstructured.Unstructured) bool {
			return object.IsOrphan(o.GetAnnotations()) && isOrDroppedChildOf(o, parent)
		},
	}
	// clusterGuard keeps a namespaced parent until its cluster-scoped
	// children are deleted (clusterchildren.go).
	clusterGuard = &guard{
		finalizer: object.FinalizerClusterChildren, annotation: object.AnnotationClusterKinds,
		name: "cluster-children", guarded: "cluster-scoped children", kinds: clusterKinds,
		guards: func(o, parent *unstructured.Unstructured) bool {
			return isClusterChild(o) && object.IsChildOf(o, parent)
		},
	}
)

// finalizerPatch returns the JSON patch that gives parent g's finalizer
// with want (and the kinds it lists already: the list only grows while the
// finalizer stays, so a kind is never forgotten while a child of it may be
// owned) in g's annotation, or nil when it has them. With want empty it
// returns nil: removing the finalizer takes a check of the live children
// first (see removeFinalizerPatch). The patch is conditional on parent's
// UID and resourceVersion.
func finalizerPatch(parent *unstructured.Unstructured, g *guard, want []schema.GroupKind) []patchOp {
	if len(want) == 0 {
		return nil
	}
	ann := parent.GetAnnotations()
	have := ann[g.annotation]
	kinds := object.FormatGroupKinds(append(object.ParseGroupKinds(have), want...))
	fins := parent.GetFinalizers()
	hasFin := slices.Contains(fins, g.finalizer)
	if hasFin && kinds == have {
		return nil
	}
	ops := preconditions(parent)
	switch {
	case hasFin:
	case fins == nil:
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/finalizers", Value: []string{g.finalizer}})
	default:
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/finalizers/-", Value: g.finalizer})
	}
	if ann == nil {
		return append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{g.annotation: kinds}})
	}
	return append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(g.annotation), Value: kinds})
}

// removeFinalizerPatch returns the JSON patch that removes g's finalizer
// and annotation from parent, or nil when it has neither.
func removeFinalizerPatch(parent *unstructured.Unstructured, g *guard) []patchOp {
	ops := preconditions(parent)
	pre := len(ops)
	fins := parent.GetFinalizers()
	for i := len(fins) - 1; i >= 0; i-- {
		if fins[i] == g.finalizer {
			ops = append(ops, patchOp{Op: "remove", Path: "/metadata/finalizers/" + strconv.Itoa(i)})
		}
	}
	if _, ok := parent.GetAnnotations()[g.annotation]; ok {
		ops = append(ops, patchOp{Op: "remove", Path: "/metadata/annotations/" + escapePointer(g.annotation)})
	}
	if len(ops) == pre {
		return nil
	}
	return ops
}

// has reports whether parent carries g's finalizer or its annotation.
func (g *guard) has(parent *unstructured.Unstructured) bool {
	_, ann := parent.GetAnnotations()[g.annotation]
	return ann || slices.Contains(parent.GetFinalizers(), g.finalizer)
}

// preconditions make a patch apply only to obj as it was read: the same
// object (UID), unchanged since (resourceVersion, which the API server
// checks, answering a Conflict).
func preconditions(obj *unstructured.Unstructured) []patchOp {
	return []patchOp{
		{Op: "test", Path: "/metadata/uid", Value: string(obj.GetUID())},
		{Op: "replace", Path: "/metadata/resourceVersion", Value: obj.GetResourceVersion()},
	}
}

// escapePointer escapes a JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// ensureGuard makes sure parent carries g's finalizer, listing the kind of
// every child g guards among children (rendered, or cached), before any of
// them is applied. It returns the parent as last written (or parent), for
// the next pass of the reconcile.
func (gs *Guards) ensureGuard(ctx context.Context, g *guard, parent *unstructured.Unstructured, children ...[]*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ops := finalizerPatch(parent, g, g.kinds(children...))
	if ops == nil {
		return parent, nil
	}
	resp, err := gs.patchParent(ctx, parent, ops)
	if err != nil {
		return parent, fmt.Errorf("add finalizer %s to %s %s/%s before applying %s: %w",
			g.finalizer, gs.Kind, parent.GetNamespace(), parent.GetName(), g.guarded, err)
	}
	klog.FromContext(ctx).V(2).Info("Added the "+g.name+" finalizer", "kinds", resp.GetAnnotations()[g.annotation])
	return resp, nil
}

// settleGuard runs after prune. While parent has children g guards,
// rendered or live (the rendered children as this reconcile's applies
// left them, or the cache has them: a child annotated by hand counts too),
// g's finalizer lists their kinds; once it has none, and a fresh list
// finds none either (the cache may not hold a child just applied yet, and
// a pruned child may still be going), the finalizer goes. The live objects
// are the apply's answers where it wrote, not the cache: the watch echo of
// Loom's own write does not enqueue the parent again, so a decision on a
// cache behind that write would stand.
//
// It returns the parent as last written (or parent).
func (gs *Guards) settleGuard(ctx context.Context, g *guard, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	current := liveList(live)
	if len(g.kinds(rendered, current)) > 0 {
		return gs.ensureGuard(ctx, g, parent, rendered, current)
	}
	if !g.has(parent) {
		return parent, nil
	}
	left, err := gs.listGuarded(ctx, g, parent)
	if err != nil || len(left) > 0 {
		return parent, err
	}
	return gs.removeFinalizer(ctx, parent, g)
}

// Settle settles the guards after prune (settleGuard, settleRemote), the
// orphan finalizer first. It returns the parent as last written.
func (gs *Guards) Settle(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	for _, g := range []*guard{orphanGuard, clusterGuard} {
		var err error
		if parent, err = gs.settleGuard(ctx, g, parent, rendered, live); err != nil {
			return parent, err
		}
	}
	parent, err := gs.settlePatches(ctx, parent, rendered)
	if err != nil {
		return parent, err
	}
	return gs.settleRemote(ctx, parent, rendered, live)
}

// liveList returns the objects of live, in no particular order.
func liveList(live map[object.Ref]*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(live))
	for _, l := range live {
		out = append(out, l)
	}
	return out
}

// removeFinalizer removes g's finalizer and annotation from parent, and
// returns the parent as that patch left it (or parent, when there was
// nothing to remove or the parent is gone).
func (gs *Guards) removeFinalizer(ctx context.Context, parent *unstructured.Unstructured, g *guard) (*unstructured.Unstructured, error) {
	ops := removeFinalizerPatch(parent, g)
	if ops == nil {
		return parent, nil
	}
	resp, err := gs.patchParent(ctx, parent, ops)
	if apierrors.IsNotFound(err) {
		return parent, nil
	}
	if err != nil {
		return parent, fmt.Errorf("remove finalizer %s from %s %s/%s: %w", g.finalizer, gs.Kind, parent.GetNamespace(), parent.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("Removed a finalizer", "finalizer", g.finalizer)
	return resp, nil
}

// patchParent JSON-patches parent with ops (which are conditional on its
// resourceVersion).
func (gs *Guards) patchParent(ctx context.Context, parent *unstructured.Unstructured, ops []patchOp) (*unstructured.Unstructured, error) {
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	return gs.Client.Resource(gs.Parents).Namespace(parent.GetNamespace()).Patch(ctx, parent.GetName(), types.JSONPatchType, body,
		metav1.PatchOptions{FieldManager: gs.FieldManager})
}

// listGuarded lists afresh, from the API server rather than the cache
// (which may not hold a child just applied), parent's children that g
// guards: of the kinds g's annotation on parent lists that its set
// declares (guardedKinds), and of those its cached children g guards
// have, the objects that carry parent's ApplySet label and g.guards.
func (gs *Guards) listGuarded(ctx context.Context, g *guard, parent *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	kinds, ignored := guardedKinds(parent, g, declaredKinds(gs.Set(), g))
	if len(ignored) > 0 {
		klog.FromContext(ctx).Info("Ignored kinds that a parent's annotation lists but its set does not declare",
			"annotation", g.annotation, "kinds", object.FormatGroupKinds(ignored))
	}
	kinds = append(kinds, g.kinds(gs.Owned(parent.GetUID()))...)
	seen := map[schema.GroupKind]bool{}
	var out []*unstructured.Unstructured
	for _, gk := range kinds {
		if seen[gk] {
			continue
		}
		seen[gk] = true
		m, err := gs.Mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue // not served, so none exists
		}
		if err != nil {
			return nil, err
		}
		ns := parent.GetNamespace()
		if ns == "" {
			ns = gs.Namespace
		}
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			ns = ""
		}
		list, err := gs.Client.Resource(m.Resource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: object.ChildSelector(parent)})
		if err != nil {
			return nil, fmt.Errorf("list %s children of %s %s/%s: %w", gk, gs.Kind, parent.GetNamespace(), parent.GetName(), err)
		}
		for i := range list.Items {
			if o := &list.Items[i]; g.guards(o, parent) {
				out = append(out, o)
			}
		}
	}
	return out, nil
}
