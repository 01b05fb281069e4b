package apply

// A patch child (object.ManagePatch) is someone else's object: Loom
// applies the template's fields to it under its own field manager, and
// never creates or deletes it. It carries no ownerReference and no Loom
// label (render gives it none), so the child cache does not hold it: Loom
// reads it as a lookup (the reconcile's reader, which watches it for the
// parent), and reads it in full, for its managedFields, only when its
// version is not the one Loom's last apply or read gave it.

import (
	"context"
	"fmt"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// patch applies a patch child that exists (read through obs); one that
// does not is Unchanged with no Object: the parent waits for it. The
// decision is Apply's (the record, or the proof from Loom's managedFields
// entry, expect.go), taken on the object read in full from the server,
// since a lookup read carries no managedFields; a record of the version
// Loom's apply (or that read) gave the object spares the read.
func (a *Applier) patch(ctx context.Context, desired *unstructured.Unstructured, obs Observer, res object.Result, parent types.UID) object.Result {
	seen := a.observe(desired, obs, res)
	if seen.Err != nil || seen.Object == nil {
		return seen
	}
	desired = prepare(desired)
	ref := res.Ref
	hash, err := Hash(desired)
	if err != nil {
		return failed(res, fmt.Errorf("hash %s: %w", ref, err))
	}
	if a.patchedAt(ref, hash, seen.Object) {
		res.Object = seen.Object
		return res
	}
	gvr, err := a.target(desired.GroupVersionKind(), ref.Namespace)
	if err != nil {
		return failed(res, fmt.Errorf("patch %s: %w", ref, err))
	}
	full, err := a.client.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return res // deleted since the lookup read: the parent waits
	}
	if err != nil {
		return failed(res, fmt.Errorf("read %s to patch it: %w", ref, err))
	}
	if err := notAnotherParents(full, parent); err != nil {
		return failed(res, err)
	}
	unchanged, _, recorded := a.decide(ref, hash, full)
	if !unchanged && !recorded {
		unchanged = a.proven(ctx, ref, desired, hash, full)
	}
	if unchanged {
		a.rememberRead(ref, hash, full)
		res.Object = full
		return res
	}
	resp, err := a.client.Resource(gvr).Namespace(ref.Namespace).Apply(ctx, ref.Name, withHash(desired, hash),
		metav1.ApplyOptions{FieldManager: a.manager, Force: true})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return res
		}
		return failed(res, fmt.Errorf("patch %s: %w", ref, err))
	}
	if anew, err := undoCreate(ctx, a.client.Resource(gvr).Namespace(ref.Namespace), full, resp); anew || err != nil {
		if err != nil {
			return failed(res, err)
		}
		return res // deleted since the read: the parent waits
	}
	a.rememberRead(ref, hash, resp)
	res.Action, res.Object = object.Configured, resp
	if full.GetAnnotations()[AnnotationApplied] == hash {
		res.Drift = regained(full, resp, a.manager) // another writer changed fields Loom sets
	}
	return res
}

// notAnotherParents refuses to patch obj when it is the child of a parent
// other than parent (it carries Loom's label, and another controller, or
// none): Loom's one field manager owns that parent's ownerReference and
// labels in it, which a patch, setting neither, would remove. Its own
// parent's child is a switch from full, which a patch releases so.
func notAnotherParents(obj *unstructured.Unstructured, parent types.UID) error {
	if obj.GetLabels()[object.LabelManagedBy] != object.ManagedByValue {
		return nil
	}
	if owner, _ := object.OwnerOf(obj); owner != nil && owner.UID == parent {
		return nil
	}
	return fmt.Errorf("%s is another parent's child (label %s=%s): %s: %s cannot name it",
		object.RefOf(obj), object.LabelManagedBy, object.ManagedByValue, object.AnnotationManage, object.ManagePatch)
}

// rememberRead records obj, read from (or answered by) the server, as the
// object Loom's fields of the desired object with hash are in. No cache
// holds a patch child, so the record is never behind one.
func (a *Applier) rememberRead(ref object.Ref, hash string, obj *unstructured.Unstructured) {
	rv := obj.GetResourceVersion()
	a.remember(ref, newRecord(hash, obj.GetUID(), rv, rv, pack.Fingerprint(obj, a.manager)))
}

// patchedAt reports whether live, a patch child as a lookup read it, is
// at the version Loom's record of the desired object with hash holds:
// nobody wrote it since Loom applied or read it, so Loom's fields are as
// they were.
func (a *Applier) patchedAt(ref object.Ref, hash string, live *unstructured.Unstructured) bool {
	a.mu.Lock()
	rec, ok := a.applied[keyOf(ref)]
	a.mu.Unlock()
	return ok && rec.hash == digestOf(hash) && rec.rv != 0 && rec.rv == versionOf(live.GetResourceVersion()) &&
		rec.uid == digestOf(string(live.GetUID())) && live.GetDeletionTimestamp() == nil &&
		live.GetAnnotations()[AnnotationApplied] == hash
}

// GiveBack gives Loom's fields in the objects refs back: the objects
// someone else owns that Loom patched (patch children that no longer
// render, or whose parent is deleted). Each is applied with no field
// under Loom's manager (apiVersion, kind and its name only), which
// removes the fields only Loom owned and leaves every other writer's. An
// object that is gone needs nothing, and so does one that does not say
// it is patched (loom.dev/manage: patch, which Loom's patch wrote): the
// record names it, but Loom holds nothing in it (or it is not Loom's to
// give back, a record written by hand). Each given back is Orphaned.
func (a *Applier) GiveBack(ctx context.Context, refs []object.Ref) object.ChangeSet {
	cs := make(object.ChangeSet, 0, len(refs))
	for _, ref := range refs {
		res := object.Result{Ref: ref}
		m, err := a.mapper.RESTMapping(ref.GroupKind)
		if err != nil {
			cs = append(cs, failed(res, fmt.Errorf("give back %s: %w", ref, err)))
			continue
		}
		res.APIVersion = m.GroupVersionKind.GroupVersion().String()
		rc := a.client.Resource(m.Resource).Namespace(ref.Namespace)
		cur, err := rc.Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			a.Forget(ref)
			continue
		}
		if err != nil {
			cs = append(cs, failed(res, fmt.Errorf("read %s to give its fields back: %w", ref, err)))
			continue
		}
		if cur.GetAnnotations()[object.AnnotationManage] != object.ManagePatch {
			continue
		}
		empty := &unstructured.Unstructured{}
		empty.SetGroupVersionKind(m.GroupVersionKind)
		empty.SetName(ref.Name)
		empty.SetNamespace(ref.Namespace)
		resp, err := rc.Apply(ctx, ref.Name, empty, metav1.ApplyOptions{FieldManager: a.manager, Force: true})
		if err == nil {
			_, err = undoCreate(ctx, rc, cur, resp)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			cs = append(cs, failed(res, fmt.Errorf("give back Loom's fields in %s: %w", ref, err)))
			continue
		}
		a.Forget(ref)
		res.Action = object.Orphaned
		cs = append(cs, res)
	}
	return cs
}

// undoCreate deletes the object an apply made anew. A server-side apply
// creates a missing object, and no precondition stops it (a
// resourceVersion is ignored on create: see create), so an object that
// was deleted between Loom's read (read) and its apply of a patch child,
// or of giving Loom's fields back, is made again with Loom's fields alone.
// The answer then has another UID than read; that object is deleted at
// once, on the condition that it is the one the apply made. anew reports
// it.
func undoCreate(ctx context.Context, rc dynamic.ResourceInterface, read, resp *unstructured.Unstructured) (anew bool, err error) {
	if resp == nil || resp.GetUID() == read.GetUID() {
		return false, nil
	}
	uid := resp.GetUID()
	err = rc.Delete(ctx, resp.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return true, fmt.Errorf("delete %s, which Loom's apply created after its owner deleted it: %w", object.RefOf(resp), err)
	}
	return true, nil
}
