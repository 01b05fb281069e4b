package controller

import (
	"context"
	"slices"
	"sort"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// reader returns the render.Reader of one reconcile of parent p, whose set
// declares rules. fresh holds the children this reconcile applied, as the
// API server answered: newer than any cache.
func (lc *lookupCache) reader(ctx context.Context, p parentKey, rules []config.LookupRule) *lookupReader {
	return &lookupReader{lc: lc, ctx: ctx, parent: p, rules: rules, fresh: map[object.Ref]*unstructured.Unstructured{}}
}

// lookupReader is the render.Reader of one reconcile. It records what it
// read, and the first error of the environment (a list that failed), which
// the reconcile retries instead of treating it as a broken template.
type lookupReader struct {
	lc     *lookupCache
	ctx    context.Context
	parent parentKey
	rules  []config.LookupRule
	read   []objectKey
	fresh  map[object.Ref]*unstructured.Unstructured
	err    error
	// as, when set, is the set's ServiceAccount: a lookup of a declared
	// kind is answered only if the account may make it (package identity).
	as     *identity.Account
	idents identity.Source
	// seedMark, when set, is the fingerprint of the seed this render
	// read, to be written on the parent (AnnotationSeed).
	seedMark string
}

// Namespaced reports whether the kind is namespaced.
func (r *lookupReader) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	m, err := r.lc.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, r.fail(err)
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Get answers a lookup of one object.
func (r *lookupReader) Get(gvk schema.GroupVersionKind, namespace, name string) (map[string]any, error) {
	ref := object.Ref{GroupKind: gvk.GroupKind(), Namespace: namespace, Name: name}
	gvr, err := r.resource(gvk)
	if err != nil {
		return nil, err
	}
	if err := r.authorize("get", gvr, gvk, namespace, name); err != nil {
		return nil, err
	}
	key := objectKey{gr: gvr.GroupResource(), namespace: namespace, name: name}
	r.watch(key)
	if f := r.fresh[ref]; f != nil {
		return f.DeepCopy().Object, nil
	}
	rv, found, err := r.resourceVersion(gvr, gvk, namespace, name)
	if err != nil || !found {
		return nil, err
	}
	return r.lc.get(r.ctx, gvr, gvk, key, rv)
}

// List answers a lookup of every object of a kind in a namespace.
func (r *lookupReader) List(gvk schema.GroupVersionKind, namespace string) ([]map[string]any, error) {
	gvr, err := r.resource(gvk)
	if err != nil {
		return nil, err
	}
	if err := r.authorize("list", gvr, gvk, namespace, ""); err != nil {
		return nil, err
	}
	key := objectKey{gr: gvr.GroupResource(), namespace: namespace}
	r.watch(key)
	mi, err := r.lc.pool.acquire(r.ctx, gvr, namespace, "")
	if err != nil {
		return nil, r.fail(err)
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
func (r *lookupReader) resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	m, err := r.lc.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, r.fail(err)
	}
	return m.Resource, nil
}

// resourceVersion says whether the object exists, and at which version,
// from the metadata informer of a declared kind, or the child informer of
// an undeclared one (only the parent's own children are readable then).
func (r *lookupReader) resourceVersion(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, namespace, name string) (string, bool, error) {
	if !declared(r.rules, gvk.GroupKind()) {
		if err := r.lc.children.ensure(r.ctx, gvr, namespace != ""); err != nil {
			return "", false, r.fail(err)
		}
		c := r.lc.children.get(gvr.GroupResource(), namespace, name)
		if c == nil {
			return "", false, nil
		}
		return c.GetResourceVersion(), true, nil
	}
	mi, err := r.lc.pool.acquire(r.ctx, gvr, namespace, name)
	if err != nil {
		return "", false, r.fail(err)
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

// authorize checks that the set's ServiceAccount, if it has one, may
// make a lookup of a declared kind. The parent's own children need no
// check: the account wrote them.
func (r *lookupReader) authorize(verb string, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, namespace, name string) error {
	if r.as == nil || !declared(r.rules, gvk.GroupKind()) {
		return nil
	}
	if err := r.idents.Authorize(r.ctx, r.as, verb, gvr, namespace, name); err != nil {
		return r.fail(err)
	}
	return nil
}

// exists says whether an object exists, from a metadata informer of its
// name, and watches it for this parent: its creation or deletion
// reconciles the parent again.
func (r *lookupReader) exists(gvr schema.GroupVersionResource, namespace, name string) (bool, error) {
	r.watch(objectKey{gr: gvr.GroupResource(), namespace: namespace, name: name})
	mi, err := r.lc.pool.acquire(r.ctx, gvr, namespace, name)
	if err != nil {
		return false, r.fail(err)
	}
	_, ok, _ := mi.inf.GetStore().GetByKey(namespace + "/" + name)
	return ok, nil
}

// fail records the first error of the environment and returns it.
func (r *lookupReader) fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return err
}

// watch records that this reconcile read key, in the index at once.
func (r *lookupReader) watch(key objectKey) {
	r.lc.watch(r.parent, key)
	if !slices.Contains(r.read, key) {
		r.read = append(r.read, key)
	}
}

// done ends the reconcile's reads: what it did not read this time is no
// longer watched for it.
func (r *lookupReader) done() { r.lc.replace(r.parent, r.read) }

// declared reports whether rules declare gk.
func declared(rules []config.LookupRule, gk schema.GroupKind) bool {
	for _, rl := range rules {
		if gv, err := schema.ParseGroupVersion(rl.APIVersion); err == nil && gv.Group == gk.Group && rl.Kind == gk.Kind {
			return true
		}
	}
	return false
}
