package childcache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// informerKey names one metadata informer: a resource, the namespace it
// is limited to ("" for all, or a cluster-scoped kind), and the one name
// it selects ("" for every object).
type informerKey struct {
	gr              schema.GroupResource
	namespace, name string
}

// MaxNamedInformers bounds the informers of single names per resource;
// past it, the kind's informer serves further names.
const MaxNamedInformers = 32

// demoteBelow is the lower bound of names read through a kind's informer
// (with the names' own informers of the resource, and no list): under
// it, the names get informers of their own again and the kind's stops.
const demoteBelow = MaxNamedInformers / 2

// metaInformer is one metadata-only informer.
type metaInformer struct {
	inf cache.SharedIndexInformer
	gvr schema.GroupVersionResource
	// ctx is done once the informer is stopped, by stop.
	ctx  context.Context
	stop context.CancelFunc
	mu   sync.Mutex
	err  error // the last list error before the first sync
}

// informerPool runs the metadata-only informers of looked-up kinds: one
// per name while few names of a kind are read, one of the whole kind past
// MaxNamedInformers. Each change an informer sees is passed to changed.
// An informer is acquired for each key read through it, and stopped once
// every one of them is released.
type informerPool struct {
	meta      metadata.Interface
	namespace string // Loom's own scope; "" for all
	resync    time.Duration
	// changed is called for every change an informer sees.
	changed func(gr schema.GroupResource, namespace, name string)
	// syncTimeout bounds a reconcile's wait for a new informer's list.
	syncTimeout time.Duration
	// runs counts the informers whose Run has not returned: stopped ones
	// that are still winding down, and a kind's informer handing its names
	// back, included.
	runs atomic.Int64

	mu        sync.Mutex
	ctx       context.Context
	informers map[informerKey]*metaInformer
	// named counts the informers of single names, per resource.
	named map[schema.GroupResource]int
	// users are, per informer, the keys read through it.
	users map[informerKey]map[objectKey]struct{}
	// servedBy are, per key read, the informers it was read through.
	servedBy map[objectKey][]informerKey
}

func newInformerPool(ctx context.Context, mc metadata.Interface, namespace string, resync time.Duration,
	changed func(schema.GroupResource, string, string)) *informerPool {
	return &informerPool{
		meta: mc, namespace: namespace, resync: resync, changed: changed, syncTimeout: 5 * time.Second, ctx: ctx,
		informers: map[informerKey]*metaInformer{}, named: map[schema.GroupResource]int{},
		users: map[informerKey]map[objectKey]struct{}{}, servedBy: map[objectKey][]informerKey{},
	}
}

// acquire returns the synced metadata informer that covers name (every
// object for "") in namespace for gvr, starting it if needed: the name's
// own informer, or the kind's. It fails at once while its list fails
// (say, forbidden by RBAC), and after a short wait for its first list.
// The informer is held for the key read (namespace, name) until release.
func (ip *informerPool) acquire(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*metaInformer, error) {
	ip.mu.Lock()
	ik := ip.pickLocked(gvr, namespace, name)
	mi := ip.startLocked(ctx, gvr, ik)
	ip.holdLocked(ik, objectKey{gr: ik.gr, namespace: namespace, name: name})
	ip.mu.Unlock()
	if mi.inf.HasSynced() {
		return mi, nil
	}
	if err := mi.listErr(); err != nil {
		return nil, &NotWatchedError{Resource: ik.gr, Err: err}
	}
	wctx, cancel := context.WithTimeout(ctx, ip.syncTimeout)
	defer cancel()
	if cache.WaitForCacheSync(wctx.Done(), mi.inf.HasSynced) {
		return mi, nil
	}
	if err := mi.listErr(); err != nil {
		return nil, &NotWatchedError{Resource: ik.gr, Err: err}
	}
	return nil, &NotWatchedError{Resource: ik.gr, Err: fmt.Errorf("its first list did not finish within %s", ip.syncTimeout)}
}

// pickLocked returns the key of the informer that serves a lookup of name
// ("" for a list) in namespace.
func (ip *informerPool) pickLocked(gvr schema.GroupVersionResource, namespace, name string) informerKey {
	kind := informerKey{gr: gvr.GroupResource()}
	if ip.namespace != "" && namespace != "" {
		kind.namespace = namespace // Loom is limited to namespaces: watch each one read
	}
	return pickInformer(kind, name, func(k informerKey) bool { _, ok := ip.informers[k]; return ok }, ip.named[kind.gr])
}

// startLocked returns the informer ik, started if it does not run.
func (ip *informerPool) startLocked(ctx context.Context, gvr schema.GroupVersionResource, ik informerKey) *metaInformer {
	if mi, ok := ip.informers[ik]; ok {
		return mi
	}
	if ik.name != "" {
		ip.named[ik.gr]++
	}
	mi := ip.newInformer(gvr, ik)
	ip.informers[ik] = mi
	mi.ctx, mi.stop = context.WithCancel(ip.ctx)
	ip.runs.Add(1)
	go func() {
		defer ip.runs.Add(-1)
		mi.inf.Run(mi.ctx.Done())
	}()
	klog.FromContext(ctx).V(2).Info("Watching looked-up kind", "resource", gvr.String(), "namespace", ik.namespace, "name", ik.name)
	return mi
}

// holdLocked records that key is read through the informer ik.
func (ip *informerPool) holdLocked(ik informerKey, key objectKey) {
	us := ip.users[ik]
	if us == nil {
		us = map[objectKey]struct{}{}
		ip.users[ik] = us
	}
	us[key] = struct{}{}
	if !slices.Contains(ip.servedBy[key], ik) {
		ip.servedBy[key] = append(ip.servedBy[key], ik)
	}
}

// release lets go of keys, which no parent reads any more: an informer
// through which nothing else is read is stopped, and its objects dropped.
// A kind's informer through which fewer than demoteBelow names are read
// then hands them to informers of their own (demote).
func (ip *informerPool) release(ctx context.Context, keys []objectKey) {
	if len(keys) == 0 {
		return
	}
	ip.mu.Lock()
	defer ip.mu.Unlock()
	released := map[schema.GroupResource]bool{}
	for _, key := range keys {
		for _, ik := range ip.servedBy[key] {
			delete(ip.users[ik], key)
			if len(ip.users[ik]) == 0 {
				ip.stopLocked(ctx, ik)
			}
		}
		delete(ip.servedBy, key)
		released[key.gr] = true
	}
	for ik := range ip.informers {
		if ik.name == "" && released[ik.gr] && ip.demotableLocked(ik) {
			ip.demoteLocked(ctx, ik)
		}
	}
}

// demotableLocked reports whether the kind's informer ik serves no list,
// and fewer than demoteBelow names are read of its resource.
func (ip *informerPool) demotableLocked(ik informerKey) bool {
	for key := range ip.users[ik] {
		if key.name == "" {
			return false
		}
	}
	return ip.named[ik.gr]+len(ip.users[ik]) < demoteBelow
}

// demoteLocked moves the names read through the kind's informer ik to
// informers of their own, and stops ik once they have listed, so that no
// change goes unseen in between.
func (ip *informerPool) demoteLocked(ctx context.Context, ik informerKey) {
	kind := ip.informers[ik]
	delete(ip.informers, ik) // from now on, names get informers of their own
	var own []*metaInformer
	for key := range ip.users[ik] {
		nk := ik
		nk.name = key.name
		own = append(own, ip.startLocked(ctx, kind.gvr, nk))
		ip.holdLocked(nk, key)
		ip.servedBy[key] = slices.DeleteFunc(ip.servedBy[key], func(k informerKey) bool { return k == ik })
	}
	delete(ip.users, ik)
	klog.FromContext(ctx).V(2).Info("Watching looked-up names one by one again", "resource", ik.gr.String(), "namespace", ik.namespace, "names", len(own))
	go func() {
		// Bounded: a name whose list keeps failing must not keep the
		// whole kind's cache; its reads fail as any unlisted one's do.
		pctx, cancel := context.WithTimeout(kind.ctx, ip.syncTimeout)
		defer cancel()
		_ = wait.PollUntilContextCancel(pctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
			for _, mi := range own {
				if !mi.inf.HasSynced() && mi.ctx.Err() == nil { // listing, and not released meanwhile
					return false, nil
				}
			}
			return true, nil
		})
		kind.stop()
	}()
}

// stopLocked stops the informer ik and forgets it.
func (ip *informerPool) stopLocked(ctx context.Context, ik informerKey) {
	mi, ok := ip.informers[ik]
	if !ok {
		return
	}
	mi.stop()
	delete(ip.informers, ik)
	delete(ip.users, ik)
	if ik.name != "" {
		ip.named[ik.gr]--
	}
	klog.FromContext(ctx).V(2).Info("Stopped watching looked-up kind", "resource", ik.gr.String(), "namespace", ik.namespace, "name", ik.name)
}

// pickInformer decides which informer serves a lookup of name ("" for a
// list) under kind, the key of the kind's informer: the name's own when it
// runs, else the kind's when it runs, else a new one of the name's own
// while fewer than MaxNamedInformers run for the resource (named of
// them), else the kind's.
func pickInformer(kind informerKey, name string, running func(informerKey) bool, named int) informerKey {
	own := kind
	own.name = name
	switch {
	case name == "", running(own):
		return own
	case running(kind):
		return kind
	case named < MaxNamedInformers:
		return own
	}
	return kind
}

func (mi *metaInformer) listErr() error {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return mi.err
}

func (ip *informerPool) newInformer(gvr schema.GroupVersionResource, ik informerKey) *metaInformer {
	var tweak metadatainformer.TweakListOptionsFunc
	if ik.name != "" {
		tweak = func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ik.name).String()
		}
	}
	inf := metadatainformer.NewFilteredMetadataInformer(ip.meta, gvr, ik.namespace, ip.resync, cache.Indexers{}, tweak).Informer()
	mi := &metaInformer{inf: inf, gvr: gvr}
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
			ip.changed(gr, m.Namespace, m.Name)
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
