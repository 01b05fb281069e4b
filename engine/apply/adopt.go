package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/loom-operator/loom/engine/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// noSuchVersion is a resourceVersion no stored object has: with etcd, a
// resourceVersion is the revision of the object's last write, and etcd's
// first write is revision 2. An apply that names it can only create.
const noSuchVersion = "1"

// create applies a child that the cache does not hold (whatever Loom's
// records say of its name), in one request that can only create it: a forced apply whose
// resourceVersion precondition no existing object meets. The API server
// decides atomically, so an object created by someone else just before
// is refused, not taken over (a read, then an apply, leaves that window
// open). When the name is taken (a conflict), adoption decides on the
// object read back, and create returns no object and no error if Loom may
// apply over it. A resource that refuses a resourceVersion on create (some
// API servers' Services did) falls back to that read for good.
func (a *Applier) create(ctx context.Context, gvr schema.GroupVersionResource, desired *unstructured.Unstructured, hash string) (*unstructured.Unstructured, error) {
	if want, _ := object.OwnerOf(desired); want == nil {
		return nil, nil // not a parent's child (the CLI's tests); nothing to protect
	}
	gr := gvr.GroupResource()
	if _, refused := a.noCreateOnly.Load(gr); refused {
		return nil, a.adoptable(ctx, gvr, desired)
	}
	obj := withHash(desired, hash)
	obj.SetResourceVersion(noSuchVersion)
	ref := object.RefOf(desired)
	resp, err := a.client.Resource(gvr).Namespace(ref.Namespace).Apply(ctx, ref.Name, obj,
		metav1.ApplyOptions{FieldManager: a.manager, Force: true})
	switch {
	case err == nil:
		return resp, nil
	case apierrors.IsConflict(err):
		return nil, a.adoptable(ctx, gvr, desired)
	case !apierrors.IsInvalid(err) && strings.Contains(err.Error(), "resourceVersion"):
		a.noCreateOnly.Store(gr, true)
		klog.FromContext(ctx).Info("Resource refuses a resourceVersion on create: new children of its kind are read before they are created",
			"resource", gr.String(), "err", err.Error())
		return nil, a.adoptable(ctx, gvr, desired)
	}
	return nil, a.applyError(ctx, gvr, desired, err)
}

// adoptable decides, for a child the cache does not hold, whether Loom may
// apply it: yes when no object of that name exists, or when adoption
// allows the existing one. It costs one read, only when a create-only
// apply found the name taken (or the resource refuses one).
func (a *Applier) adoptable(ctx context.Context, gvr schema.GroupVersionResource, desired *unstructured.Unstructured) error {
	ref := object.RefOf(desired)
	cur, err := a.client.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s before creating it: %w", ref, err)
	}
	return adoption(cur, desired)
}

// adoption decides whether Loom may apply desired over cur, an object of
// the same kind and name that exists (in the cache or on the server): yes
// when cur is already the parent's (its controller is the parent, or it
// carries the parent's ApplySet label and no controller, or a controller
// that is an earlier parent of the same kind and name) or carries the
// adopt annotation naming the parent. Carrying Loom's labels is not
// enough: an object of another parent, or one whose labels were copied by
// hand, is refused. A cluster-scoped child of a namespaced parent has its
// controller in object.AnnotationOwner (see object.OwnerOf), and is judged
// the same way.
func adoption(cur, desired *unstructured.Unstructured) error {
	want, wantNS := object.OwnerOf(desired)
	if want == nil {
		return nil
	}
	ref := object.RefOf(desired)
	// A cluster-scoped child names its namespaced parent's namespace in
	// errors and in the adopt annotation; a namespaced child's parent is
	// in the child's namespace.
	outside := ""
	if ref.Namespace == "" {
		outside = wantNS
	}
	id := desired.GetLabels()[object.LabelPartOf]
	ownSet := id != "" && cur.GetLabels()[object.LabelPartOf] == id
	if owner, ownerNS := object.OwnerOf(cur); owner != nil {
		if owner.UID == want.UID {
			return nil
		}
		if ownSet && object.GroupKindOf(*owner) == object.GroupKindOf(*want) && owner.Name == want.Name && ownerNS == wantNS {
			// Loom's child of an earlier parent of this name (deleted and
			// created again), which the garbage collector (or, for a
			// cluster-scoped child, Loom's finalizer) has not removed
			// yet: the apply replaces that reference, which Loom set.
			return nil
		}
		e := &object.OwnedByAnotherError{Ref: ref, Owner: *owner, Want: *want}
		if ref.Namespace == "" {
			e.OwnerNamespace, e.WantNamespace = ownerNS, wantNS
		}
		return e
	}
	if ownSet {
		return nil // Loom's child of this parent, e.g. orphaned when an earlier parent of that name was deleted
	}
	if cur.GetAnnotations()[object.AnnotationAdopt] == object.AdoptValueIn(*want, outside) {
		return nil
	}
	return &object.NotAdoptedError{Ref: ref, Want: *want, WantNamespace: outside}
}
