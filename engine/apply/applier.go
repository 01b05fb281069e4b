package apply

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unique"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// FieldManager is the server-side apply field manager Loom writes with.
const FieldManager = "loom"

// Applier applies children with server-side apply and prunes them. It is
// safe for concurrent use.
type Applier struct {
	client dynamic.Interface
	*shared
}

// shared is what every view of one Applier (As) shares: the records of
// what was applied, whoever wrote it.
type shared struct {
	mapper  meta.RESTMapper
	manager string

	// expect computes the managedFields entry an apply gives a child,
	// to decide "unchanged" without a record (nil: not without one).
	expect *expecter

	mu      sync.Mutex
	applied map[recordKey]record
	// warned holds what Apply found of each drifted child in warn mode
	// (drift.go); nil until one drifts.
	warned map[recordKey]warned
	// noCreateOnly holds the group-resources whose API server refused a
	// create-only apply (see create).
	noCreateOnly sync.Map
}

// record is what Loom last applied to one object, taken from the server's
// response: the hash of the desired object, the object's UID and
// resourceVersion, and the fingerprint of the fields Loom owns in it. One
// is kept per child for as long as Loom runs, so it is small and holds no
// pointer: strings are kept as digests, compared for equality only.
//
// resourceVersions are opaque (after an etcd restore they even go
// backwards), so a record never asks whether one is older than another.
// It tells whether the cache is behind Loom's write from what the cache
// delivers instead: the cache is behind from the write until its watch
// delivers a version of the object other than pre, the one it held when
// Loom wrote (see Observe). A watch delivers an object's versions in the
// order they were written, so the first one after pre is Loom's write or
// a later one, or, if another writer came in between, one that leads to
// it; in every case the cache no longer holds the object Loom read. The
// watch may deliver the write before its response reaches Loom: seen, the
// last version delivered, kept across records (and in a record with no
// apply, for a child Loom has not applied yet), tells it then.
type record struct {
	hash   digest
	uid    digest
	fields digest
	rv     version
	// pre is the resourceVersion the cache held when Loom wrote, zero
	// when it held no object.
	pre version
	// seen is the last version the watch delivered, zero if none.
	seen version
	// behind is set from the write until the cache delivers a version
	// other than pre.
	behind bool
	// stale is set when a reconcile went on with a cached object older
	// than this write: the watch echo of the write must then reach the
	// controller, which has not seen the object as it is.
	stale bool
}

// newRecord returns the record of an apply that gave the object
// resourceVersion rv, over the version pre the cache held ("" when none).
// An apply that changed nothing leaves the version, and the cache, as they
// were.
func newRecord(hash string, uid types.UID, rv, pre, fields string) record {
	return record{hash: digestOf(hash), uid: digestOf(string(uid)), fields: digestOf(fields),
		rv: versionOf(rv), pre: versionOf(pre), behind: rv != pre}
}

// digest stands for a string a record compares with: the first 128 bits of
// its SHA-256, so two different strings never have the same digest in
// practice.
type digest [16]byte

func digestOf(s string) digest {
	var d digest
	if s == "" {
		return d
	}
	sum := sha256.Sum256([]byte(s))
	copy(d[:], sum[:])
	return d
}

// version stands for a resourceVersion a record compares with: a 64-bit
// FNV-1a hash of it, 0 for none. Only versions of one object are ever
// compared, so two different ones having the same hash is not a concern
// in practice, and each takes 8 bytes, as the number it replaced did.
type version uint64

func versionOf(rv string) version {
	if rv == "" {
		return 0
	}
	h := uint64(14695981039346656037) // FNV-1a, as hash/fnv, without its allocation
	for i := 0; i < len(rv); i++ {
		h ^= uint64(rv[i])
		h *= 1099511628211
	}
	return version(h)
}

// recordKey is a Ref as a record's key: its group, kind and namespace,
// which few objects do not share, kept once (a unique.Handle), and its
// name.
type recordKey struct {
	scope unique.Handle[scope]
	name  string
}

type scope struct {
	gk        schema.GroupKind
	namespace string
}

// keyOf returns the key of ref's record. The name is ref's own string: the
// key of a record to store must be made by ownKey.
func keyOf(ref object.Ref) recordKey {
	return recordKey{scope: unique.Make(scope{gk: ref.GroupKind, namespace: ref.Namespace}), name: ref.Name}
}

// ownKey returns the key of ref's record with a name string of its own. A
// rendered object's strings share the memory of the whole document they
// were decoded from, and a record lives as long as its child: its key must
// not keep that document alive.
func ownKey(ref object.Ref) recordKey {
	k := keyOf(ref)
	k.name = strings.Clone(k.name)
	return k
}

// New returns an Applier that writes as manager (FieldManager if empty).
func New(client dynamic.Interface, mapper meta.RESTMapper, manager string, opts ...Option) *Applier {
	if manager == "" {
		manager = FieldManager
	}
	s := &shared{mapper: mapper, manager: manager, applied: map[recordKey]record{}}
	for _, o := range opts {
		o(s)
	}
	return &Applier{client: client, shared: s}
}

// As returns a view of a that sends its requests through client (one
// that impersonates a set's ServiceAccount, say) and shares a's records,
// so that what one identity applied is known to every other.
func (a *Applier) As(client dynamic.Interface) *Applier {
	return &Applier{client: client, shared: a.shared}
}

// Manager is the field manager the Applier writes as.
func (a *Applier) Manager() string { return a.manager }

// Resource maps a kind to its resource, and says whether it is namespaced.
func (a *Applier) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Apply makes one child match desired. live is the child as the caller's
// informer cache has it (at whatever version the cache watches its kind),
// or nil when it is not there. When live is exactly what Loom last applied
// from the same desired object, Apply sends no request at all and reports
// Unchanged. Apply never writes over an object that is not the parent's
// (see adoption): it checks the cached object, and creates a child the
// cache does not hold with a request that cannot write over another object
// (see create), whatever Loom remembers of the name. A record says the
// name was Loom's child, not that it still is: deleted and replaced by
// someone else's object while the delete event is still on its way, it is
// not.
func (a *Applier) Apply(ctx context.Context, desired, live *unstructured.Unstructured) object.Result {
	desired = prepare(desired)
	ref := object.RefOf(desired)
	res := object.Result{Ref: ref, APIVersion: desired.GetAPIVersion()}
	hash, err := Hash(desired)
	if err != nil {
		return failed(res, fmt.Errorf("hash %s: %w", ref, err))
	}
	// One look at the record: a proof by another worker between two looks
	// would leave this one with neither the record's answer nor its own
	// proof (TestProofsRunConcurrently).
	unchanged, known, recorded := a.decide(ref, hash, live)
	if !unchanged && !recorded {
		unchanged = a.proven(ctx, ref, desired, hash, live)
	}
	if unchanged {
		res.Action, res.Object = object.Unchanged, live
		return res
	}
	if live != nil {
		// Carrying Loom's labels (so being cached) is not being this
		// parent's child.
		if err := adoption(live, desired); err != nil {
			return failed(res, err)
		}
	}
	gvr, err := a.target(desired.GroupVersionKind(), ref.Namespace)
	if err != nil {
		return failed(res, fmt.Errorf("apply %s: %w", ref, err))
	}
	var full *unstructured.Unstructured
	var reverted []string
	valuesKept := false
	if p, err := driftPolicyOf(desired); err != nil {
		return failed(res, fmt.Errorf("apply %s: %w", ref, err))
	} else if p.active() && live != nil {
		// Not plain repair: see decideDrift (drift.go).
		d, err := a.decideDrift(ctx, gvr, ref, desired, hash, live, p)
		if err != nil {
			return failed(res, err)
		}
		if d.unchanged {
			res.Action, res.Object, res.Drifted = object.Unchanged, live, d.drifted
			return res
		}
		desired, full, reverted, valuesKept = d.sent, d.full, d.reverted, d.valuesKept
	}
	var resp *unstructured.Unstructured
	if live == nil {
		if resp, err = a.create(ctx, gvr, desired, hash); err != nil {
			return failed(res, err)
		}
	}
	before := live
	if full != nil {
		before = full
	} else if known && live != nil && pack.IsSlim(live) && live.GetAnnotations()[AnnotationApplied] == hash {
		// A repair: another writer changed fields Loom sets. The cache
		// keeps only a fingerprint of Loom's fields, so read them, once,
		// to name the fields taken back. A failed read names none.
		if full, err := a.client.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
			before = full
		}
	}
	if resp == nil {
		resp, err = a.client.Resource(gvr).Namespace(ref.Namespace).Apply(ctx, ref.Name, withHash(desired, hash),
			metav1.ApplyOptions{FieldManager: a.manager, Force: true})
		if err != nil {
			return failed(res, a.applyError(ctx, gvr, desired, err))
		}
	}
	a.remember(ref, newRecord(hash, resp.GetUID(), resp.GetResourceVersion(), resourceVersionOf(live), pack.Fingerprint(resp, a.manager)))
	res.Action, res.Object = object.Configured, resp
	if live == nil {
		res.Action = object.Created // as far as the cache knew
	}
	if live != nil && live.GetUID() == resp.GetUID() && live.GetAnnotations()[AnnotationApplied] == hash {
		// The same desired object as before: any field Loom took back had
		// been changed or removed by another writer.
		switch {
		case !pack.IsSlim(before):
			res.Drift = regained(before, resp, a.manager)
		case pack.Fingerprint(before, a.manager) != pack.Fingerprint(resp, a.manager):
			res.Drift = []string{object.DriftUnrecorded} // no record since a restart: no read was made
		}
	}
	switch {
	case valuesKept:
		res.Drift = nil // Loom's entry takes back fields whose values are its own
	case len(res.Drift) == 0 && len(reverted) > 0:
		res.Drift = reverted // warned of, and taken back by a new desired object
	}
	a.forgetWarned(ref)
	return res
}

// target maps a child to the resource it is applied to, refusing a
// cluster-scoped kind in a namespace (a namespaced parent cannot own it
// unless its set declares the kind, and then render gives it none) and a
// namespaced kind without one (a set that declares it cluster-scoped).
func (a *Applier) target(gvk schema.GroupVersionKind, namespace string) (schema.GroupVersionResource, error) {
	gvr, namespaced, err := a.Resource(gvk)
	if err != nil {
		return gvr, err
	}
	switch {
	case !namespaced && namespace != "":
		return gvr, &object.ClusterScopedChildError{Kind: gvk.Kind, Group: gvk.Group}
	case namespaced && namespace == "":
		return gvr, fmt.Errorf("%s is namespaced, but the child has no namespace: a cluster-scoped parent's template must set metadata.namespace, and loom.yaml's clusterScoped must not declare a namespaced kind", gvk.GroupKind())
	}
	return gvr, nil
}

// check reports whether the child needs no write, and whether Loom has a
// record of applying this very desired object (so the object is Loom's
// and exists unless someone deleted it, which the caller's watch reports).
// The child needs no write when:
//   - the cache has not yet caught up with Loom's own apply of this very
//     desired object (it still holds what it held when Loom wrote, and
//     has delivered nothing else since; see record); or
//   - live is the object Loom applied it to (same UID), it still carries
//     the hash of this desired object, and Loom owns exactly the fields
//     its apply left it owning (same fingerprint of its managedFields
//     entry). Any change or removal of one of those fields by another
//     writer changes that entry, so this decision is exact: it does not
//     compare values, and no server normalisation can fool it.
//
// With no record of this desired object (after a restart, or a takeover
// of the parent), Apply asks proven (expect.go), which decides from the
// live entry and the server's schema; what it cannot prove is applied.
func (a *Applier) check(ref object.Ref, hash string, live *unstructured.Unstructured) (unchanged, known bool) {
	unchanged, known, _ = a.decide(ref, hash, live)
	return unchanged, known
}

// decide is check, which also reports, from the same look at the records,
// whether Loom has a record of applying this very desired object (hash)
// to ref. A record of another one (this process applied the child from an
// earlier template, and another process applied it since) says nothing of
// the child as it is.
func (a *Applier) decide(ref object.Ref, hash string, live *unstructured.Unstructured) (unchanged, known, recorded bool) {
	key := keyOf(ref)
	a.mu.Lock()
	defer a.mu.Unlock()
	rec, ok := a.applied[key]
	if !ok || rec.hash != digestOf(hash) {
		return false, ok && rec.hash != digest{}, false // a record with no hash holds only what the watch delivered
	}
	if rec.behind && versionOf(resourceVersionOf(live)) == rec.pre {
		rec.stale = true
		// A map assignment stores the key it is given, even over an
		// equal one: the record keeps a name of its own.
		a.applied[ownKey(ref)] = rec
		return true, true, true
	}
	return live != nil && digestOf(string(live.GetUID())) == rec.uid && live.GetDeletionTimestamp() == nil &&
		live.GetAnnotations()[AnnotationApplied] == hash && digestOf(pack.Fingerprint(live, a.manager)) == rec.fields, true, true
}

// resourceVersionOf returns obj's resourceVersion, "" for no object.
func resourceVersionOf(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	return obj.GetResourceVersion()
}

// remember stores r, the record of an apply of ref. If the watch already
// delivered the version the apply produced, the cache is not behind it.
func (a *Applier) remember(ref object.Ref, r record) {
	key := ownKey(ref)
	a.mu.Lock()
	if old, ok := a.applied[key]; ok && old.seen != 0 {
		r.seen = old.seen
		r.behind = r.behind && old.seen != r.rv
	}
	a.applied[key] = r
	a.mu.Unlock()
}

// Observe tells the Applier that the cache delivered resourceVersion rv
// of the object (an add or an update), which ends the time the cache is
// behind Loom's last write (see record) unless rv is the version the cache
// held before it. It reports whether rv is the one Loom's own last apply
// produced: the watch echo of that write, which the reconcile that made it
// has already taken into account (unless a reconcile went on with the
// older object since). ref's name must be a string of its own, as a
// cached object's is (pack copies each name out of the JSON): the record
// keeps it, so Observe, called on every watch event of a child, does not
// copy it.
func (a *Applier) Observe(ref object.Ref, rv string) (ownWrite bool) {
	key := keyOf(ref)
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := a.applied[key] // with no apply yet, a record of what the watch delivered
	d := versionOf(rv)
	rec.seen = d
	if rec.behind && d != rec.pre {
		rec.behind = false
	}
	a.applied[key] = rec
	return !rec.stale && rv != "" && rec.rv == d
}

// Len returns how many objects the Applier keeps a record of.
func (a *Applier) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.applied)
}

// Forget drops what Loom remembers of an object that is gone.
func (a *Applier) Forget(ref object.Ref) {
	key := keyOf(ref)
	a.mu.Lock()
	delete(a.applied, key)
	delete(a.warned, key)
	a.mu.Unlock()
}

// Prune deletes objects that no longer render. Each delete is conditional
// on the object's UID, so an object recreated under the same name by
// someone else is never deleted by mistake. An object already gone counts
// as pruned.
func (a *Applier) Prune(ctx context.Context, objs []*unstructured.Unstructured) object.ChangeSet {
	cs := make(object.ChangeSet, 0, len(objs))
	for _, o := range objs {
		ref := object.RefOf(o)
		res := object.Result{Ref: ref, APIVersion: o.GetAPIVersion()}
		gvr, _, err := a.Resource(o.GroupVersionKind())
		if err != nil {
			cs = append(cs, failed(res, fmt.Errorf("prune %s: %w", ref, err)))
			continue
		}
		uid := o.GetUID()
		policy := metav1.DeletePropagationBackground
		err = a.client.Resource(gvr).Namespace(ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &uid},
			PropagationPolicy: &policy,
		})
		if err != nil && !apierrors.IsNotFound(err) {
			cs = append(cs, failed(res, fmt.Errorf("prune %s: %w", ref, err)))
			continue
		}
		a.Forget(ref)
		res.Action = object.Pruned
		cs = append(cs, res)
	}
	return cs
}

// failed returns r as a failure with err.
func failed(r object.Result, err error) object.Result {
	r.Action, r.Err = object.Failed, err
	return r
}

// conflict turns the API server's refusal of a second controller
// ownerReference into an OwnedByAnotherError naming the object's owner. It
// costs one read, on that failure only.
// applyError is the error of a failed apply of desired, naming it; an
// ownerReference conflict becomes an OwnedByAnotherError.
func (a *Applier) applyError(ctx context.Context, gvr schema.GroupVersionResource, desired *unstructured.Unstructured, err error) error {
	if c := a.conflict(ctx, gvr, desired, err); c != nil {
		return c
	}
	return fmt.Errorf("apply %s: %w", object.RefOf(desired), err)
}

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
	return &object.OwnedByAnotherError{Ref: object.RefOf(desired), Owner: *owner, Want: *want, Err: err}
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
