package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
)

// lookupCache answers templates' lookups from the cluster, and re-reconciles
// the parents that read an object when it changes.
//
// It keeps little per object of a looked-up kind: metadata-only informers
// hold each object's name, namespace, UID and resourceVersion, never its
// data. While templates read few distinct names of a kind (a platform
// ConfigMap per namespace, say), each name has an informer of its own,
// selected by metadata.name across the namespaces Loom reads, so that the
// kind's other objects (10 000 unrelated ConfigMaps, or Loom's own
// children) cost nothing at all; past maxNamedInformers names, one
// informer of the whole kind (per namespace, when Loom is limited to
// one) serves the new ones. A lookup of an object the informer does not
// hold answers "none" with no request; otherwise the object is read once
// with a GET and kept, as JSON, until its resourceVersion changes or no
// parent reads it any more. A parent's own children, whose kinds need no
// declaration, are found the same way through the child informers.
//
// The index from each object read (or each namespace listed) to the
// parents that read it is updated as the reads happen, before the GET, so
// that a change made while a reconcile runs re-enqueues it. What a
// reconcile no longer read is dropped when it ends, and everything of a
// parent when the parent goes.
type lookupCache struct {
	client    dynamic.Interface
	meta      metadata.Interface
	mapper    meta.RESTMapper
	children  *childWatcher
	namespace string // Loom's own scope; "" for all
	resync    time.Duration
	// enqueue re-reconciles a parent that read a changed object.
	enqueue func(parentKey)
	// syncTimeout bounds a reconcile's wait for a new informer's list.
	syncTimeout time.Duration

	mu        sync.Mutex
	ctx       context.Context
	informers map[informerKey]*metaInformer
	content   map[objectKey]content
	readers   map[objectKey]map[parentKey]struct{}
	// reads are each parent's keys in readers: usually one or two, so a
	// slice, not a map per parent.
	reads map[parentKey][]objectKey
	// named counts the informers of single names, per resource.
	named map[schema.GroupResource]int
}

// parentKey names a parent across kinds.
type parentKey struct {
	gk  schema.GroupKind
	key cache.ObjectName
}

// objectKey names an object read, or with name "" a namespace listed.
type objectKey struct {
	gr              schema.GroupResource
	namespace, name string
}

// informerKey names one metadata informer: a resource, the namespace it
// is limited to ("" for all, or a cluster-scoped kind), and the one name
// it selects ("" for every object).
type informerKey struct {
	gr              schema.GroupResource
	namespace, name string
}

// maxNamedInformers bounds the informers of single names per resource;
// past it, the kind's informer serves further names.
const maxNamedInformers = 32

// content is an object read with a GET, kept as JSON, valid while the
// informer holds the same resourceVersion.
type content struct {
	rv   string
	gvk  schema.GroupVersionKind
	json []byte
}

// metaInformer is one metadata-only informer.
type metaInformer struct {
	inf cache.SharedIndexInformer
	mu  sync.Mutex
	err error // the last list error before the first sync
}

func newLookupCache(ctx context.Context, client dynamic.Interface, mc metadata.Interface, mapper meta.RESTMapper, children *childWatcher,
	namespace string, resync time.Duration, enqueue func(parentKey)) *lookupCache {
	return &lookupCache{
		client: client, meta: mc, mapper: mapper, children: children, namespace: namespace, resync: resync, enqueue: enqueue,
		syncTimeout: 5 * time.Second, ctx: ctx,
		informers: map[informerKey]*metaInformer{}, content: map[objectKey]content{},
		readers: map[objectKey]map[parentKey]struct{}{}, reads: map[parentKey][]objectKey{},
		named: map[schema.GroupResource]int{},
	}
}

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
	key := objectKey{gr: gvr.GroupResource(), namespace: namespace}
	r.watch(key)
	mi, err := r.lc.informer(r.ctx, gvr, namespace, "")
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
		if err := r.lc.children.ensure(r.ctx, gvr); err != nil {
			return "", false, r.fail(err)
		}
		c := r.lc.children.get(gvr.GroupResource(), namespace, name)
		if c == nil {
			return "", false, nil
		}
		return c.GetResourceVersion(), true, nil
	}
	mi, err := r.lc.informer(r.ctx, gvr, namespace, name)
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

// get returns the object at resourceVersion rv, from the content kept or
// with one GET.
func (lc *lookupCache) get(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, key objectKey, rv string) (map[string]any, error) {
	lc.mu.Lock()
	c, ok := lc.content[key]
	lc.mu.Unlock()
	if ok && c.rv == rv && c.gvk == gvk {
		var obj map[string]any
		if err := utiljson.Unmarshal(c.json, &obj); err == nil { // whole numbers as int64, as the API machinery decodes them
			return obj, nil
		}
	}
	got, err := lc.client.Resource(gvk.GroupVersion().WithResource(gvr.Resource)).Namespace(key.namespace).Get(ctx, key.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", gvk.Kind, key.namespace+"/"+key.name, err)
	}
	got.SetManagedFields(nil)
	if raw, err := got.MarshalJSON(); err == nil {
		lc.mu.Lock()
		if _, watched := lc.readers[key]; watched {
			lc.content[key] = content{rv: got.GetResourceVersion(), gvk: gvk, json: raw}
		}
		lc.mu.Unlock()
	}
	return got.Object, nil
}

// watch records that parent p reads key.
func (lc *lookupCache) watch(p parentKey, key objectKey) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	ps := lc.readers[key]
	if ps == nil {
		ps = map[parentKey]struct{}{}
		lc.readers[key] = ps
	}
	ps[p] = struct{}{}
	if rs := lc.reads[p]; !slices.Contains(rs, key) {
		lc.reads[p] = append(rs, key)
	}
}

// replace makes read everything parent p reads: keys it read before but
// not this time stop being watched for it.
func (lc *lookupCache) replace(p parentKey, read []objectKey) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, key := range lc.reads[p] {
		if !slices.Contains(read, key) {
			lc.unwatchLocked(p, key)
		}
	}
	if len(read) == 0 {
		delete(lc.reads, p)
		return
	}
	lc.reads[p] = read
}

// forget drops everything parent p read.
func (lc *lookupCache) forget(p parentKey) {
	if lc == nil { // a Manager that never ran
		return
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, key := range lc.reads[p] {
		lc.unwatchLocked(p, key)
	}
	delete(lc.reads, p)
}

// unwatchLocked drops p from key's readers, and key's content once no
// parent reads it.
func (lc *lookupCache) unwatchLocked(p parentKey, key objectKey) {
	ps := lc.readers[key]
	delete(ps, p)
	if len(ps) == 0 {
		delete(lc.readers, key)
		delete(lc.content, key)
	}
}

// changed is called for every change a lookup informer sees: the parents
// that read the object, or listed its namespace, are enqueued. (A change
// to a parent's own child reaches that parent through the child
// informers' ownerReference routing.)
func (lc *lookupCache) changed(gr schema.GroupResource, namespace, name string) {
	lc.mu.Lock()
	var targets []parentKey
	for _, key := range []objectKey{{gr, namespace, name}, {gr, namespace, ""}} {
		for p := range lc.readers[key] {
			targets = append(targets, p)
		}
	}
	lc.mu.Unlock()
	for _, p := range targets {
		lc.enqueue(p)
	}
}

// informer returns the synced metadata informer that covers name (every
// object for "") in namespace for gvr, starting it if needed: the name's
// own informer, or the kind's. It fails at once while its list fails
// (say, forbidden by RBAC), and after a short wait for its first list.
func (lc *lookupCache) informer(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*metaInformer, error) {
	kind := informerKey{gr: gvr.GroupResource()}
	if lc.namespace != "" && namespace != "" {
		kind.namespace = namespace // Loom is limited to namespaces: watch each one read
	}
	lc.mu.Lock()
	ik := pickInformer(kind, name, func(k informerKey) bool { _, ok := lc.informers[k]; return ok }, lc.named[kind.gr])
	mi, ok := lc.informers[ik]
	if !ok {
		if ik.name != "" {
			lc.named[ik.gr]++
		}
		mi = lc.newInformer(gvr, ik)
		lc.informers[ik] = mi
		go mi.inf.Run(lc.ctx.Done())
		klog.FromContext(ctx).V(2).Info("Watching looked-up kind", "resource", gvr.String(), "namespace", ik.namespace, "name", ik.name)
	}
	lc.mu.Unlock()
	if mi.inf.HasSynced() {
		return mi, nil
	}
	if err := mi.listErr(); err != nil {
		return nil, &NotWatchedError{Resource: ik.gr, Err: err}
	}
	wctx, cancel := context.WithTimeout(ctx, lc.syncTimeout)
	defer cancel()
	if cache.WaitForCacheSync(wctx.Done(), mi.inf.HasSynced) {
		return mi, nil
	}
	if err := mi.listErr(); err != nil {
		return nil, &NotWatchedError{Resource: ik.gr, Err: err}
	}
	return nil, &NotWatchedError{Resource: ik.gr, Err: fmt.Errorf("its first list did not finish within %s", lc.syncTimeout)}
}

// pickInformer decides which informer serves a lookup of name ("" for a
// list) under kind, the key of the kind's informer: the name's own when it
// runs, else the kind's when it runs, else a new one of the name's own
// while fewer than maxNamedInformers run for the resource (named of
// them), else the kind's.
func pickInformer(kind informerKey, name string, running func(informerKey) bool, named int) informerKey {
	own := kind
	own.name = name
	switch {
	case name == "", running(own):
		return own
	case running(kind):
		return kind
	case named < maxNamedInformers:
		return own
	}
	return kind
}

func (mi *metaInformer) listErr() error {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return mi.err
}

func (lc *lookupCache) newInformer(gvr schema.GroupVersionResource, ik informerKey) *metaInformer {
	var tweak metadatainformer.TweakListOptionsFunc
	if ik.name != "" {
		tweak = func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ik.name).String()
		}
	}
	inf := metadatainformer.NewFilteredMetadataInformer(lc.meta, gvr, ik.namespace, lc.resync, cache.Indexers{}, tweak).Informer()
	mi := &metaInformer{inf: inf}
	_ = inf.SetTransform(slimMetadata)
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if !inf.HasSynced() {
			mi.mu.Lock()
			mi.err = err
			mi.mu.Unlock()
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	gr := ik.gr
	notify := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			lc.changed(gr, m.Namespace, m.Name)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*metav1.PartialObjectMetadata)
			c, ok2 := cur.(*metav1.PartialObjectMetadata)
			if ok1 && ok2 && o.ResourceVersion == c.ResourceVersion {
				return // a resync
			}
			notify(cur)
		},
		DeleteFunc: notify,
	})
	return mi
}

// slimMetadata keeps, of each object a lookup informer caches, only its
// name, namespace, UID and resourceVersion: whether it exists, and whether
// the copy read last is still current.
func slimMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
	}}, nil
}
