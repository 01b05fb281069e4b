package controller

import (
	"context"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/engine/controller/metrics"
	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/shard"
)

// parentGen is one generation of a parent controller's informer. An
// unsharded controller has one for its life. A sharded one lists only the
// parents of the buckets it holds, so it starts another generation each
// time they change, and swaps it in once synced: the reconciles read the
// new store from then on, and the parents it holds that the last one did
// not (as they are) are enqueued.
type parentGen struct {
	informer cache.SharedIndexInformer
	held     shard.Set
	states   *metrics.ParentStates
	stop     context.CancelFunc
	// retired is set when a newer generation took over: its events are
	// ignored from then on.
	retired atomic.Bool

	mu sync.Mutex
	// live is set once the generation serves the reconciles; before,
	// its events are kept in pending (the previous one still serves).
	live    bool
	pending []cache.ObjectName
	prev    cache.Indexer
}

// store is the parent cache the reconciles read: the live generation's.
func (c *Controller) store() cache.Indexer { return c.gen.Load().informer.GetIndexer() }

// newGen builds a generation of the parent informer that holds the parents
// of held (all of them when unsharded). prev is the generation it follows,
// nil for the first, which is live from the start.
func (c *Controller) newGen(ctx context.Context, held shard.Set, prev *parentGen) *parentGen {
	g := &parentGen{held: held, live: prev == nil, states: &metrics.ParentStates{}}
	if prev != nil {
		g.prev = prev.informer.GetIndexer()
	}
	lw := c.sh.Parents.ListWatch(c.gvr, c.sh.Namespace, c.shardTweak(held))
	if c.sh.Shard != nil {
		lw = packwatch.FilterShard(lw, held, c.logger)
	}
	g.informer = packwatch.InformerOf(lw, c.gvr, c.sh.Resync)
	_, _ = g.informer.AddEventHandler(c.genHandler(g))
	_, _ = g.informer.AddEventHandler(g.states)
	gctx, cancel := context.WithCancel(ctx)
	g.stop = cancel
	go g.informer.Run(gctx.Done())
	return g
}

// genHandler is g's handler of parent events: nothing once g is retired,
// the keys early keeps until g is live, and the controller's own handling
// from then on.
func (c *Controller) genHandler(g *parentGen) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if !g.retired.Load() && !g.early(obj) {
				c.enqueue(obj)
			}
		},
		UpdateFunc: func(old, cur any) {
			if !g.retired.Load() && !g.early(cur) {
				c.onUpdate(old, cur)
			}
		},
		DeleteFunc: func(obj any) {
			if !g.retired.Load() && !g.early(nil) {
				c.onDelete(obj)
			}
		},
	}
}

// early keeps, before the generation is live, the key of a parent that
// the previous generation does not hold as it is now; it reports whether
// the generation is not live yet (the event is not handled now).
func (g *parentGen) early(obj any) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live {
		return false
	}
	p, ok := packwatch.ID(obj)
	if !ok {
		return true
	}
	key := cache.NewObjectName(p.GetNamespace(), p.GetName())
	if old, exists, _ := g.prev.GetByKey(key.String()); exists {
		if o, ok := packwatch.ID(old); ok && o.GetUID() == p.GetUID() && o.GetResourceVersion() == p.GetResourceVersion() {
			return true // the last generation held it as it is, and dealt with it
		}
	}
	g.pending = append(g.pending, key)
	return true
}

// shardTweak narrows parent lists and watches to held's buckets on the
// server, where it filters by KEP-5866 shard selectors. An empty set
// selects nothing by a label no parent carries.
func (c *Controller) shardTweak(held shard.Set) func(*metav1.ListOptions) {
	if c.sh.Shard == nil {
		return nil
	}
	return func(o *metav1.ListOptions) {
		if held == 0 {
			o.LabelSelector = shard.LabelBucket + "=none"
			return
		}
		if c.sh.ShardServerFilter {
			o.ShardSelector = shard.Selector(held)
		}
	}
}

// reshard runs, on a sharded controller, a new generation each time the
// held buckets change, until ctx is done.
func (c *Controller) reshard(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.reshardKick:
		}
		cur := c.gen.Load()
		held := c.sh.Shard.Held()
		if held == cur.held {
			continue
		}
		g := c.newGen(ctx, held, cur)
		if !cache.WaitForCacheSync(ctx.Done(), g.informer.HasSynced) {
			g.stop()
			return
		}
		c.swap(g)
		c.logger.Info("Parents resharded", "holds", held.String(), "parents", len(g.informer.GetIndexer().ListKeys()))
	}
}

// swap makes g the live generation.
func (c *Controller) swap(g *parentGen) {
	old := c.gen.Swap(g)
	old.retired.Store(true)
	c.sh.Metrics.Parents.Track(c, c.gvk.Kind, g.states)
	g.mu.Lock()
	g.live, g.prev = true, nil
	pending := g.pending
	g.pending = nil
	g.mu.Unlock()
	for _, k := range pending {
		c.queue.Add(k)
	}
	old.stop()
	// The parents that went to other replicas are forgotten, as if
	// deleted: what was kept for them, and the lookups they watched.
	store := g.informer.GetIndexer()
	for _, obj := range old.informer.GetIndexer().List() {
		p, ok := packwatch.ID(obj)
		if !ok {
			continue
		}
		key := cache.NewObjectName(p.GetNamespace(), p.GetName())
		if cur, exists, _ := store.GetByKey(key.String()); exists {
			if q, ok := packwatch.ID(cur); ok && q.GetUID() == p.GetUID() {
				continue
			}
		}
		c.forget(key, p.GetUID())
	}
}

// kickReshard asks the controller to follow the held buckets; it never
// blocks.
func (c *Controller) kickReshard() {
	select {
	case c.reshardKick <- struct{}{}:
	default:
	}
}
