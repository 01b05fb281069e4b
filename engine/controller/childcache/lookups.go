package childcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
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
// children) cost nothing at all; past MaxNamedInformers names, one
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
// reconcile no longer read is dropped when it ends, everything of a
// parent when the parent goes, and everything of a kind's parents when its
// set goes. An object no parent reads any more loses its content, an
// informer through which nothing is read any more is stopped, and the
// kind's, once fewer than demoteBelow names are read through it, hands
// them back to informers of their own (informerPool.release).
type lookupCache struct {
	client   dynamic.Interface
	mapper   meta.RESTMapper
	children *childWatcher
	pool     *informerPool
	// enqueue re-reconciles a parent that read a changed object.
	enqueue func(ParentKey)

	mu      sync.Mutex
	index   lookupIndex
	content map[objectKey]content
}

// content is an object read with a GET, kept as JSON, valid while the
// informer holds the same resourceVersion.
type content struct {
	rv   string
	gvk  schema.GroupVersionKind
	json []byte
}

func newLookupCache(ctx context.Context, client dynamic.Interface, mc metadata.Interface, mapper meta.RESTMapper, children *childWatcher,
	namespace string, resync time.Duration, enqueue func(ParentKey)) *lookupCache {
	lc := &lookupCache{
		client: client, mapper: mapper, children: children, enqueue: enqueue,
		index: newLookupIndex(), content: map[objectKey]content{},
	}
	lc.pool = newInformerPool(ctx, mc, namespace, resync, lc.changed)
	return lc
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
		if lc.index.watched(key) {
			lc.content[key] = content{rv: got.GetResourceVersion(), gvk: gvk, json: raw}
		}
		lc.mu.Unlock()
	}
	return got.Object, nil
}

// watch records that parent p reads key.
func (lc *lookupCache) watch(p ParentKey, key objectKey) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.index.watch(p, key)
}

// replace makes read everything parent p reads: keys it read before but
// not this time stop being watched for it, and their content is dropped
// once no parent reads them.
func (lc *lookupCache) replace(p ParentKey, read []objectKey) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.dropLocked(lc.index.replace(p, read))
}

// forgetKind drops everything the parents of kind gk read: its set is
// gone.
func (lc *lookupCache) forgetKind(gk schema.GroupKind) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.dropLocked(lc.index.forgetKind(gk))
}

// forget drops everything parent p read.
func (lc *lookupCache) forget(p ParentKey) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.dropLocked(lc.index.forget(p))
}

// dropLocked drops the content of keys no parent reads any more, and
// releases the informers they were read through.
func (lc *lookupCache) dropLocked(unread []objectKey) {
	for _, key := range unread {
		delete(lc.content, key)
	}
	lc.pool.release(lc.pool.ctx, unread)
}

// changed is called for every change a lookup informer sees: the parents
// that read the object, or listed its namespace, are enqueued. (A change
// to a parent's own child reaches that parent through the child
// informers' ownerReference routing.)
func (lc *lookupCache) changed(gr schema.GroupResource, namespace, name string) {
	lc.mu.Lock()
	targets := lc.index.readersOf(objectKey{gr, namespace, name}, objectKey{gr, namespace, ""})
	lc.mu.Unlock()
	for _, p := range targets {
		lc.enqueue(p)
	}
}

// Stats are the sizes of what the lookup cache holds.
type Stats struct {
	// Informers are the metadata informers running.
	Informers int
	// Watched are the objects and namespaces some parent reads.
	Watched int
	// Cached are the objects whose JSON is kept.
	Cached int
}

// stats returns the sizes of what lc holds.
func (lc *lookupCache) stats() Stats {
	lc.mu.Lock()
	s := Stats{Watched: len(lc.index.readers), Cached: len(lc.content)}
	lc.mu.Unlock()
	s.Informers = int(lc.pool.runs.Load())
	return s
}
