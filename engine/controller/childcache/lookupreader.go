package childcache

import (
	"context"
	"slices"
	"sort"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Authorizer checks that a reconcile may make a lookup of a declared
// kind (verb "get" or "list"), say as the set's ServiceAccount. The
// parent's own children need no check: the reconcile wrote them.
type Authorizer func(ctx context.Context, verb string, gvr schema.GroupVersionResource, namespace, name string) error

// reader returns the render.Reader of one reconcile of parent p, whose set
// declares rules; authorize, if not nil, checks each lookup of a declared
// kind.
func (lc *lookupCache) reader(ctx context.Context, p ParentKey, rules []config.LookupRule, authorize Authorizer) *Reader {
	return &Reader{lc: lc, ctx: ctx, parent: p, rules: rules, authorize: authorize, Fresh: map[object.Ref]*unstructured.Unstructured{}}
}

// Reader is the render.Reader of one reconcile. It records what it
// read, and the first error of the environment (a list that failed), which
// the reconcile retries instead of treating it as a broken template.
type Reader struct {
	lc     *lookupCache
	ctx    context.Context
	parent ParentKey
	rules  []config.LookupRule
	read   []objectKey
	// Fresh holds the children this reconcile applied, as the API server
	// answered: newer than any cache. A lookup of one of them answers it.
	Fresh map[object.Ref]*unstructured.Unstructured
	err   error
	// authorize, when set, is asked before a lookup of a declared kind
	// is answered.
	authorize Authorizer
}

// Namespaced reports whether the kind is namespaced.
func (r *Reader) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	m, err := r.lc.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, r.Fail(err)
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Get answers a lookup of one object.
func (r *Reader) Get(gvk schema.GroupVersionKind, namespace, name string) (map[string]any, error) {
	ref := object.Ref{GroupKind: gvk.GroupKind(), Namespace: namespace, Name: name}
	gvr, err := r.resource(gvk)
	if err != nil {
		return nil, err
	}
	if err := r.check("get", gvr, gvk, namespace, name); err != nil {
		return nil, err
	}
	key := objectKey{gr: gvr.GroupResource(), namespace: namespace, name: name}
	r.watch(key)
	if f := r.Fresh[ref]; f != nil {
		return f.DeepCopy().Object, nil
	}
	rv, found, err := r.resourceVersion(gvr, gvk, namespace, name)
	if err != nil || !found {
		return nil, err
	}
	return r.lc.get(r.ctx, gvr, gvk, key, rv)
}

// List answers a lookup of every object of a kind in a namespace.
func (r *Reader) List(gvk schema.GroupVersionKind, namespace string) ([]map[string]any, error) {
	gvr, err := r.resource(gvk)
	if err != nil {
		return nil, err
	}
	if err := r.check("list", gvr, gvk, namespace, ""); err != nil {
		return nil, err
	}
	key := objectKey{gr: gvr.GroupResource(), namespace: namespace}
	r.watch(key)
	mi, err := r.lc.pool.acquire(r.ctx, gvr, namespace, "")
	if err != nil {
		return nil, r.Fail(err)
	}
	var names []string
	for _, o := range mi.inf.GetStore().List() {
		if m, ok := o.(*metav1.PartialObjectMetadata); ok && m.Namespace == namespace {
			names = append(names, m.Name)
		}
	}
	sort.Strings(names)
	out := make([]map[string]any, 0, len(names))
	for _, n := range names {
		obj, err := r.Get(gvk, namespace, n)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out, nil
}

// resource maps a kind to its resource.
func (r *Reader) resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	m, err := r.lc.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, r.Fail(err)
	}
	return m.Resource, nil
}

// resourceVersion says whether the object exists, and at which version,
// from the metadata informer of a declared kind, or the child informer of
// an undeclared one (only the parent's own children are readable then).
func (r *Reader) resourceVersion(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, namespace, name string) (string, bool, error) {
	if !declared(r.rules, gvk.GroupKind()) {
		if err := r.lc.children.ensure(r.ctx, gvr, namespace != ""); err != nil {
			return "", false, r.Fail(err)
		}
		c := r.lc.children.get(gvr.GroupResource(), namespace, name)
		if c == nil {
			return "", false, nil
		}
		return c.GetResourceVersion(), true, nil
	}
	mi, err := r.lc.pool.acquire(r.ctx, gvr, namespace, name)
	if err != nil {
		return "", false, r.Fail(err)
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	o, ok, _ := mi.inf.GetStore().GetByKey(key)
	if !ok {
		return "", false, nil
	}
	m, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return "", false, nil
	}
	return m.ResourceVersion, true, nil
}

// check asks the reader's Authorizer, if it has one, whether a lookup
// of a declared kind may be made. The parent's own children need no
// check: the reconcile wrote them.
func (r *Reader) check(verb string, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, namespace, name string) error {
	if r.authorize == nil || !declared(r.rules, gvk.GroupKind()) {
		return nil
	}
	if err := r.authorize(r.ctx, verb, gvr, namespace, name); err != nil {
		return r.Fail(err)
	}
	return nil
}

// Exists says whether an object exists, from a metadata informer of its
// name, and watches it for this parent: its creation or deletion
// reconciles the parent again.
func (r *Reader) Exists(gvr schema.GroupVersionResource, namespace, name string) (bool, error) {
	r.watch(objectKey{gr: gvr.GroupResource(), namespace: namespace, name: name})
	mi, err := r.lc.pool.acquire(r.ctx, gvr, namespace, name)
	if err != nil {
		return false, r.Fail(err)
	}
	_, ok, _ := mi.inf.GetStore().GetByKey(namespace + "/" + name)
	return ok, nil
}

// Fail records the first error of the environment and returns it.
func (r *Reader) Fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return err
}

// watch records that this reconcile read key, in the index at once.
func (r *Reader) watch(key objectKey) {
	r.lc.watch(r.parent, key)
	if !slices.Contains(r.read, key) {
		r.read = append(r.read, key)
	}
}

// Done ends the reconcile's reads: what it did not read this time is no
// longer watched for it.
func (r *Reader) Done() { r.lc.replace(r.parent, r.read) }

// Err is the first error of the environment a read met (a list that
// failed, a kind not watched), which the reconcile retries; nil if none.
func (r *Reader) Err() error { return r.err }

// declared reports whether rules declare gk.
func declared(rules []config.LookupRule, gk schema.GroupKind) bool {
	for _, rl := range rules {
		if gv, err := schema.ParseGroupVersion(rl.APIVersion); err == nil && gv.Group == gk.Group && rl.Kind == gk.Kind {
			return true
		}
	}
	return false
}
