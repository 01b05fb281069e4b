package packwatch

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/shard"
)

// FilterShard drops, from lw's lists and watches, the parents outside
// held: all the filtering there is on a server without KEP-5866, and a
// check of the server's own where it has it.
func FilterShard(lw *cache.ListWatch, held shard.Set, logger klog.Logger) *cache.ListWatch {
	list, watchFn := lw.ListWithContextFunc, lw.WatchFuncWithContext
	var told atomic.Bool
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			obj, err := list(ctx, opts)
			l, ok := obj.(*List)
			if err != nil || !ok {
				return obj, err
			}
			kept := l.Items[:0]
			for _, p := range l.Items {
				if shard.Matches(held, p.GetUID()) {
					kept = append(kept, p)
				}
			}
			if dropped := len(l.Items) - len(kept); dropped > 0 && !told.Swap(true) {
				logger.Info("The API server did not filter parents by shard (KEP-5866 off or not served); Loom filters them",
					"dropped", dropped, "kept", len(kept))
			}
			clear(l.Items[len(kept):])
			l.Items = kept
			return l, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, opts)
			if err != nil {
				return w, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if e.Type == watch.Bookmark || e.Type == watch.Error {
					return e, true
				}
				p, ok := ID(e.Object)
				if !ok || shard.Matches(held, p.GetUID()) {
					return e, true
				}
				if !told.Swap(true) {
					// The reflector's first list may come as watch
					// events (client-go's watch-list), not a list.
					logger.Info("The API server did not filter parents by shard (KEP-5866 off or not served); Loom filters them",
						"event", string(e.Type))
				}
				return e, false
			}), nil
		},
	}
}
