package apply

// How much of a child the apply stage manages: its mode
// (object.AnnotationManage, which render writes on every child that is
// not full) decides which step it takes, from the object the child cache
// holds.

import (
	"context"
	"fmt"

	"github.com/loom-operator/loom/engine/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Step is what the apply stage does with one child, by its mode and the
// object the child cache holds (Decide).
type Step string

// The steps.
const (
	// StepApply applies the child as Apply decides (full).
	StepApply Step = "apply"
	// StepCreate creates a create-only child the cache does not hold,
	// with a request that cannot write over an existing object.
	StepCreate Step = "create"
	// StepKeep sends nothing: a create-only child exists.
	StepKeep Step = "keep"
	// StepRelease releases an observed child that is still the parent's
	// (it was full or create-only), as delete-policy orphan does, then
	// reads it.
	StepRelease Step = "release"
	// StepRead only reads an observed child.
	StepRead Step = "read"
	// StepPatch applies a patch child's fields to an object that exists,
	// and never creates it (patch.go).
	StepPatch Step = "patch"
)

// Decide returns the step of a child of mode (as object.ManageOf gives
// it), whose object in the child cache is cached (nil when none), for
// the parent with UID parent. It reads nothing and writes nothing.
func Decide(mode string, cached *unstructured.Unstructured, parent types.UID) Step {
	switch mode {
	case object.ManageCreateOnly:
		if cached != nil {
			return StepKeep
		}
		return StepCreate
	case object.ManageObserve:
		if cached != nil {
			if owner, _ := object.OwnerOf(cached); owner != nil && owner.UID == parent {
				return StepRelease
			}
		}
		return StepRead
	case object.ManagePatch:
		return StepPatch
	}
	return StepApply
}

// Observer reads an observed child: the reconcile's lookup reader, which
// binds the read as a lookup and watches the object for the parent, so
// that its creation, change or deletion reconciles the parent.
type Observer interface {
	Get(gvk schema.GroupVersionKind, namespace, name string) (map[string]any, error)
}

// ApplyManaged makes one child match desired as far as its mode says
// (Decide): a full child is applied (Apply); a create-only child is
// created when missing and never written again; an observed child is
// never written (but for its release, once, when it was the parent's),
// only read through obs. cached is the child cache's object, parent the
// parent's UID. An observed child that does not exist is Unchanged with
// no Object: the parent waits for it.
func (a *Applier) ApplyManaged(ctx context.Context, desired, cached *unstructured.Unstructured, parent types.UID, obs Observer) object.Result {
	ref := object.RefOf(desired)
	res := object.Result{Ref: ref, APIVersion: desired.GetAPIVersion(), Action: object.Unchanged}
	switch Decide(object.ManageOf(desired.GetAnnotations(), ""), cached, parent) {
	case StepKeep:
		if err := adoption(cached, desired); err != nil {
			return failed(res, err)
		}
		res.Object = cached
		return res
	case StepCreate:
		return a.createOnly(ctx, desired, res)
	case StepRelease:
		for _, r := range a.Release(ctx, []*unstructured.Unstructured{cached}, parent) {
			if r.Err != nil {
				return r
			}
			res.Action = object.Orphaned
		}
		return a.observe(desired, obs, res)
	case StepRead:
		return a.observe(desired, obs, res)
	case StepPatch:
		return a.patch(ctx, desired, obs, res, parent)
	}
	return a.Apply(ctx, desired, cached)
}

// createOnly creates a create-only child the cache does not hold. Loom
// created it already if its record says the cache is behind that write;
// an object of its name on the server that adoption allows is Loom's,
// and left as it is.
func (a *Applier) createOnly(ctx context.Context, desired *unstructured.Unstructured, res object.Result) object.Result {
	ref := object.RefOf(desired)
	if a.behindCreate(ref) {
		return res
	}
	if want, _ := object.OwnerOf(desired); want == nil {
		return a.Apply(ctx, desired, nil) // not a parent's child (the CLI's tests)
	}
	hash, err := Hash(prepare(desired))
	if err != nil {
		return failed(res, fmt.Errorf("hash %s: %w", ref, err))
	}
	gvr, err := a.target(desired.GroupVersionKind(), ref.Namespace)
	if err != nil {
		return failed(res, fmt.Errorf("create %s: %w", ref, err))
	}
	resp, err := a.create(ctx, gvr, prepare(desired), hash)
	if err != nil {
		return failed(res, err)
	}
	if resp == nil {
		// The name is taken by an object Loom may own (or the resource
		// refuses a create-only apply): it exists, or it is created.
		cur, err := a.client.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			res.Object = cur
			return res
		}
		if !apierrors.IsNotFound(err) {
			return failed(res, fmt.Errorf("read %s: %w", ref, err))
		}
		return a.Apply(ctx, desired, nil)
	}
	a.remember(ref, newRecord(hash, resp.GetUID(), resp.GetResourceVersion(), "", ""))
	res.Action, res.Object = object.Created, resp
	return res
}

// behindCreate reports whether Loom created ref and the cache has not
// delivered the object since.
func (a *Applier) behindCreate(ref object.Ref) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	rec, ok := a.applied[keyOf(ref)]
	return ok && rec.behind && rec.pre == 0 && rec.uid != digest{}
}

// observe reads an observed child through obs.
func (a *Applier) observe(desired *unstructured.Unstructured, obs Observer, res object.Result) object.Result {
	if obs == nil {
		return res
	}
	obj, err := obs.Get(desired.GroupVersionKind(), desired.GetNamespace(), desired.GetName())
	if err != nil {
		return failed(res, fmt.Errorf("read observed %s: %w", res.Ref, err))
	}
	if obj != nil {
		res.Object = &unstructured.Unstructured{Object: obj}
	}
	return res
}
