package finalizer

// The objects a parent patches (its loom.dev/manage: patch children) are
// someone else's: no ownerReference ties them to the parent, so nothing
// would take Loom's fields out of them when the parent goes. Loom records
// them on the parent (object.AnnotationPatches), with a finalizer
// (object.FinalizerPatches), before it first patches one; when one stops
// rendering, or the parent is deleted, it gives its fields in it back
// (apply.Applier.GiveBack) and drops it from the record. The record is on
// the parent, so it survives a restart.
//
// Whoever may write a parent may write that annotation too: Loom gives
// back only objects of kinds the set declares in its lookups, in the
// namespaces they may be read (as a patch child is bound at render), and
// GiveBack touches only an object that says Loom patches it.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
)

// patchGuard is the finalizer of the objects a parent patches; only its
// finalizer and annotation are used (has, removeFinalizerPatch).
var patchGuard = &guard{
	finalizer: object.FinalizerPatches, annotation: object.AnnotationPatches,
	name: "patches", guarded: "objects Loom patches",
}

// patchTargets returns the objects rendered patches (its patch children).
func patchTargets(rendered []*unstructured.Unstructured) []object.Ref {
	var out []object.Ref
	for _, c := range rendered {
		if object.ManageOf(c.GetAnnotations(), "") == object.ManagePatch {
			out = append(out, object.RefOf(c))
		}
	}
	return out
}

// toGiveBack returns the objects of recorded that rendered no longer
// writes: neither patches nor manages in full or create-only (an observed
// child is given back, since Loom no longer writes it).
func toGiveBack(recorded []object.Ref, rendered []*unstructured.Unstructured) []object.Ref {
	written := map[object.Ref]bool{}
	for _, c := range rendered {
		if object.ManageOf(c.GetAnnotations(), "") != object.ManageObserve {
			written[object.RefOf(c)] = true
		}
	}
	var out []object.Ref
	for _, r := range recorded {
		if !written[r] {
			out = append(out, r)
		}
	}
	return out
}

// recordPatch returns the JSON patch that gives parent the patches
// finalizer and a record listing want besides what it lists (the record
// only grows before an apply: what no longer renders is dropped after it
// is given back, settlePatches), or nil when it has them. More than
// object.MaxPatchTargets objects is an error.
func recordPatch(parent *unstructured.Unstructured, want []object.Ref) ([]patchOp, error) {
	if len(want) == 0 {
		return nil, nil
	}
	have := parent.GetAnnotations()[object.AnnotationPatches]
	recorded, _ := object.ParsePatchTargets(have) // a record broken by hand is written anew
	all := object.FormatPatchTargets(append(recorded, want...))
	if strings.Count(all, ",")+1 > object.MaxPatchTargets {
		return nil, fmt.Errorf("%s %s/%s patches more than %d objects", parent.GetKind(), parent.GetNamespace(), parent.GetName(), object.MaxPatchTargets)
	}
	hasFin := slices.Contains(parent.GetFinalizers(), object.FinalizerPatches)
	if hasFin && all == have {
		return nil, nil
	}
	return withRecord(parent, all, !hasFin), nil
}

// withRecord returns the JSON patch that sets parent's record to value,
// adding the finalizer when addFin.
func withRecord(parent *unstructured.Unstructured, value string, addFin bool) []patchOp {
	ops := preconditions(parent)
	switch fins := parent.GetFinalizers(); {
	case !addFin:
	case fins == nil:
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/finalizers", Value: []string{object.FinalizerPatches}})
	default:
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/finalizers/-", Value: object.FinalizerPatches})
	}
	if parent.GetAnnotations() == nil {
		return append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{object.AnnotationPatches: value}})
	}
	return append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(object.AnnotationPatches), Value: value})
}

// mayGiveBack returns the objects of the record on parent that its set
// (nil: none known, so no bound but GiveBack's own check) allows it to
// patch: of kinds its lookups declare, cluster-scoped or in the parent's
// namespace or one declared for the kind.
func mayGiveBack(set *render.Set, parent *unstructured.Unstructured) []object.Ref {
	recorded, err := object.ParsePatchTargets(parent.GetAnnotations()[object.AnnotationPatches])
	if err != nil || set == nil {
		return recorded
	}
	var out []object.Ref
	for _, r := range recorded {
		if rule := config.LookupRuleFor(set.Config.Lookups, r.GroupKind); rule != nil &&
			(r.Namespace == "" || r.Namespace == parent.GetNamespace() || slices.Contains(rule.Namespaces, r.Namespace)) {
			out = append(out, r)
		}
	}
	return out
}

// protectPatches records rendered's patch children on parent, with the
// finalizer, before any is applied. It returns the parent as last
// written (or parent).
func (gs *Guards) protectPatches(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ops, err := recordPatch(parent, patchTargets(rendered))
	if err != nil || ops == nil {
		return parent, err
	}
	resp, err := gs.patchParent(ctx, parent, ops)
	if err != nil {
		return parent, fmt.Errorf("record the objects %s %s/%s patches (finalizer %s) before patching them: %w",
			gs.Kind, parent.GetNamespace(), parent.GetName(), object.FinalizerPatches, err)
	}
	klog.FromContext(ctx).V(2).Info("Recorded the objects Loom patches", "patches", resp.GetAnnotations()[object.AnnotationPatches])
	return resp, nil
}

// settlePatches runs after prune: the recorded objects that rendered no
// longer writes get Loom's fields back, and the record then lists only
// rendered's patch children; with none, the finalizer goes.
func (gs *Guards) settlePatches(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if !patchGuard.has(parent) {
		return parent, nil
	}
	if err := gs.givePatchesBack(ctx, parent, toGiveBack(mayGiveBack(gs.Set(), parent), rendered), "as it no longer renders"); err != nil {
		return parent, err
	}
	want := object.FormatPatchTargets(patchTargets(rendered))
	if want == "" {
		return gs.removeFinalizer(ctx, parent, patchGuard)
	}
	if want == parent.GetAnnotations()[object.AnnotationPatches] && slices.Contains(parent.GetFinalizers(), object.FinalizerPatches) {
		return parent, nil
	}
	resp, err := gs.patchParent(ctx, parent, withRecord(parent, want, !slices.Contains(parent.GetFinalizers(), object.FinalizerPatches)))
	if err != nil {
		return parent, fmt.Errorf("update the record of the objects %s %s/%s patches: %w", gs.Kind, parent.GetNamespace(), parent.GetName(), err)
	}
	return resp, nil
}

// finalizePatches gives Loom's fields in every recorded object back, then
// removes the finalizer.
func (gs *Guards) finalizePatches(ctx context.Context, parent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if err := gs.givePatchesBack(ctx, parent, mayGiveBack(gs.Set(), parent), "before "+gs.Kind+" "+parent.GetName()+" is deleted"); err != nil {
		gs.Recorder.Eventf(parent, corev1.EventTypeWarning, "PatchGiveBackFailed",
			"%s waits for Loom's fields in the objects it patches to be given back (finalizer %s): %v", gs.Kind, object.FinalizerPatches, err)
		return parent, err
	}
	return gs.removeFinalizer(ctx, parent, patchGuard)
}

// givePatchesBack gives Loom's fields in refs back, with an Event on
// parent for each; when says when.
func (gs *Guards) givePatchesBack(ctx context.Context, parent *unstructured.Unstructured, refs []object.Ref, when string) error {
	if len(refs) == 0 {
		return nil
	}
	cs := gs.Applier(ctx).GiveBack(ctx, refs)
	gs.Observe(cs)
	for _, r := range cs {
		if r.Action != object.Orphaned {
			continue
		}
		klog.FromContext(ctx).Info("Gave Loom's fields back", "object", r.Ref.String(), "when", when)
		gs.Recorder.Eventf(parent, corev1.EventTypeNormal, "PatchGivenBack",
			"%s (%s: %s): gave Loom's fields back %s", r.Ref, object.AnnotationManage, object.ManagePatch, when)
	}
	return cs.Err()
}
