package apply

import (
	"context"
	"fmt"
	"sync"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
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
