package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// FieldManager is the server-side apply field manager Loom writes with.
const FieldManager = "loom"

// Applier applies children with server-side apply and prunes them. It is
// safe for concurrent use.
type Applier struct {
	client  dynamic.Interface
	mapper  meta.RESTMapper
	manager string

	mu      sync.Mutex
	applied map[Ref]record
}

// record is what Loom last applied to one object: the hash of the desired
// object, the resourceVersion the server gave it, and, only when the server
// normalised a value in a way Matches does not recognise, the server's
// values at the paths Loom sets (most records carry none, which keeps
// memory per child small).
type record struct {
	hash       string
	rv         uint64
	projection any
}

// New returns an Applier that writes as manager (FieldManager if empty).
func New(client dynamic.Interface, mapper meta.RESTMapper, manager string) *Applier {
	if manager == "" {
		manager = FieldManager
	}
	return &Applier{client: client, mapper: mapper, manager: manager, applied: map[Ref]record{}}
}

// Resource maps a kind to its resource, and says whether it is namespaced.
func (a *Applier) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Apply makes one child match desired. live is the child as the caller's
// informer cache has it, or nil when it is not there. When live already
// matches, Apply sends no request at all and reports Unchanged.
func (a *Applier) Apply(ctx context.Context, desired, live *unstructured.Unstructured) Result {
	ref := RefOf(desired)
	hash, err := Hash(desired)
	if err != nil {
		return failed(ref, fmt.Errorf("hash %s: %w", ref, err))
	}
	obj := withHash(desired, hash)
	unchanged, sameDesired := a.check(ref, hash, obj, live)
	if unchanged {
		return Result{Ref: ref, Action: Unchanged, Object: live}
	}
	gvr, err := a.target(ref)
	if err != nil {
		return failed(ref, fmt.Errorf("apply %s: %w", ref, err))
	}
	resp, err := a.client.Resource(gvr).Namespace(ref.Namespace).Apply(ctx, ref.Name, obj,
		metav1.ApplyOptions{FieldManager: a.manager, Force: true})
	if err != nil {
		if c := a.conflict(ctx, gvr, desired, err); c != nil {
			return failed(ref, c)
		}
		return failed(ref, fmt.Errorf("apply %s: %w", ref, err))
	}
	rec := record{hash: hash, rv: ParseResourceVersion(resp.GetResourceVersion())}
	if !Matches(obj.Object, resp.Object) {
		// The server normalised a value in a way Matches does not know:
		// remember what it holds, so that the next check still passes.
		rec.projection = Project(obj.Object, resp.Object)
	}
	a.remember(ref, rec)
	action := Configured
	if live == nil {
		action = Created // as far as the cache knew
	}
	r := Result{Ref: ref, Action: action, Object: resp}
	if sameDesired {
		r.Drift = drift(obj, live, resp)
	}
	return r
}

// target maps a child to the resource it is applied to, refusing a
// cluster-scoped kind in a namespace (a namespaced parent cannot own it).
func (a *Applier) target(ref Ref) (schema.GroupVersionResource, error) {
	gvr, namespaced, err := a.Resource(ref.GVK)
	if err != nil {
		return gvr, err
	}
	if !namespaced && ref.Namespace != "" {
		return gvr, fmt.Errorf("%s is cluster-scoped, so a namespaced parent cannot own it", ref.GVK.Kind)
	}
	return gvr, nil
}

// drift compares, at the paths desired sets, the live object before an
// apply of an unchanged desired object with the server's response. Where
// they differ, another writer had changed the object and the apply reverted
// it: drift returns the path of one such field. Where they agree, the apply
// only restated what the server already held (a normalisation that Matches
// does not know of), which is not drift, and drift returns "".
func drift(desired, before, after *unstructured.Unstructured) string {
	path, same := Mismatch(Project(desired.Object, after.Object), Project(desired.Object, before.Object))
	if same {
		return ""
	}
	if path == "" {
		return "(the whole object)"
	}
	return path
}

// check reports whether the child needs no write:
//   - the cache has not yet caught up with Loom's own apply of this very
//     desired object (live is missing or older than that write); or
//   - the hash annotation proves that live was applied from this desired
//     object, and live holds every desired value as written, or exactly the
//     (normalised) values the server returned when Loom last applied it.
//
// A change by another writer to a field Loom sets fails both tests.
// sameDesired says that live was applied from this desired object, so a
// write is a repair rather than an update.
func (a *Applier) check(ref Ref, hash string, obj, live *unstructured.Unstructured) (unchanged, sameDesired bool) {
	a.mu.Lock()
	rec, ok := a.applied[ref]
	a.mu.Unlock()
	ok = ok && rec.hash == hash
	if live == nil || ParseResourceVersion(live.GetResourceVersion()) < rec.rv {
		return ok, false
	}
	if live.GetAnnotations()[AnnotationApplied] != hash || live.GetDeletionTimestamp() != nil {
		return false, false
	}
	unchanged = Matches(obj.Object, live.Object) ||
		ok && rec.projection != nil && equality.Semantic.DeepEqual(rec.projection, Project(obj.Object, live.Object))
	return unchanged, true
}

// ParseResourceVersion reads a resourceVersion as a number, to tell whether
// a cached object is older than a write. Kubernetes calls them opaque, but
// etcd-backed ones are revisions; an unparsable one reads as 0, which makes
// the cached object count as current.
func ParseResourceVersion(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}

func (a *Applier) remember(ref Ref, r record) {
	a.mu.Lock()
	a.applied[ref] = r
	a.mu.Unlock()
}

// IsOwnWrite reports whether resourceVersion rv of the object is the one
// Loom's own last apply produced: the watch echo of that write, which the
// reconcile that made it has already taken into account.
func (a *Applier) IsOwnWrite(ref Ref, rv string) bool {
	a.mu.Lock()
	rec, ok := a.applied[ref]
	a.mu.Unlock()
	return ok && rec.rv != 0 && rec.rv == ParseResourceVersion(rv)
}

// Forget drops what Loom remembers of an object that is gone.
func (a *Applier) Forget(ref Ref) {
	a.mu.Lock()
	delete(a.applied, ref)
	a.mu.Unlock()
}

// Prune deletes objects that no longer render. Each delete is conditional
// on the object's UID, so an object recreated under the same name by
// someone else is never deleted by mistake. An object already gone counts
// as pruned.
func (a *Applier) Prune(ctx context.Context, objs []*unstructured.Unstructured) ChangeSet {
	cs := make(ChangeSet, 0, len(objs))
	for _, o := range objs {
		ref := RefOf(o)
		gvr, _, err := a.Resource(ref.GVK)
		if err != nil {
			cs = append(cs, failed(ref, fmt.Errorf("prune %s: %w", ref, err)))
			continue
		}
		uid := o.GetUID()
		policy := metav1.DeletePropagationBackground
		err = a.client.Resource(gvr).Namespace(ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &uid},
			PropagationPolicy: &policy,
		})
		if err != nil && !apierrors.IsNotFound(err) {
			cs = append(cs, failed(ref, fmt.Errorf("prune %s: %w", ref, err)))
			continue
		}
		a.Forget(ref)
		cs = append(cs, Result{Ref: ref, Action: Pruned})
	}
	return cs
}

func failed(ref Ref, err error) Result {
	return Result{Ref: ref, Action: Failed, Err: err}
}

// OwnedByAnotherError means a child's name is taken by an object that
// another controller owns. Loom does not take it over; an object that no
// controller owns is adopted instead, as Kubernetes' own controllers adopt
// orphans.
type OwnedByAnotherError struct {
	Ref Ref
	// Owner is the object's controller; Want is the parent that renders it.
	Owner, Want metav1.OwnerReference
	// Err is the API server's refusal.
	Err error
}

// Error explains the conflict and what to do about it.
func (e *OwnedByAnotherError) Error() string {
	return fmt.Sprintf("%s is controlled by %s %s, not by %s %s; Loom does not take over another controller's object: "+
		"rename the child in the template, or delete the object or its ownerReference",
		e.Ref, e.Owner.Kind, e.Owner.Name, e.Want.Kind, e.Want.Name)
}

// Unwrap returns the API server's error, which is not worth retrying.
func (e *OwnedByAnotherError) Unwrap() error { return e.Err }

// conflict turns the API server's refusal of a second controller
// ownerReference into an OwnedByAnotherError naming the object's owner. It
// costs one read, on that failure only.
func (a *Applier) conflict(ctx context.Context, gvr schema.GroupVersionResource, desired *unstructured.Unstructured, err error) error {
	if !apierrors.IsInvalid(err) || !hasCause(err, "metadata.ownerReferences") {
		return nil
	}
	want := metav1.GetControllerOfNoCopy(desired)
	if want == nil {
		return nil
	}
	cur, gerr := a.client.Resource(gvr).Namespace(desired.GetNamespace()).Get(ctx, desired.GetName(), metav1.GetOptions{})
	if gerr != nil {
		return nil
	}
	owner := metav1.GetControllerOfNoCopy(cur)
	if owner == nil || owner.UID == want.UID {
		return nil
	}
	return &OwnedByAnotherError{Ref: RefOf(desired), Owner: *owner, Want: *want, Err: err}
}

// hasCause reports whether an API error names field among its causes.
func hasCause(err error, field string) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Field == field {
			return true
		}
	}
	return false
}
