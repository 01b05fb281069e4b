package controller

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/crdinstall"
)

// discoveryBackoff spaces the refreshes of discovery while a kind is
// awaited: from 100ms, doubling, to 30s (plus up to 10% jitter).
func discoveryBackoff() wait.Backoff {
	return wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}
}

// watchCRDs refreshes discovery once the CRD informer has synced (a CRD
// established before its list raised no event), whenever a CRD is added,
// changes its served versions or becomes established, or is deleted, and
// then again with backoff while a controller or a parent waits for a kind
// the cluster does not serve (see rediscover). Events are coalesced: a
// burst of CRD changes causes one refresh.
func (m *Manager) watchCRDs(ctx context.Context) {
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(m.client, crdinstall.CRDs, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(crdinstall.Slim)
	var synced atomic.Bool
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			if synced.Load() { // the refresh after the sync covers the list
				notify()
			}
		},
		UpdateFunc: func(old, cur any) {
			if crdinstall.ServingChanged(old, cur) {
				notify()
			}
		},
		DeleteFunc: func(any) { notify() },
	})
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	synced.Store(true)
	m.mu.Lock()
	m.crds = inf.GetStore()
	m.mu.Unlock()
	m.rediscover(ctx, changed)
}

// rediscover refreshes discovery now, on each signal of changed, and
// with backoff while awaitsKind: the API server that answers discovery can
// publish a kind after its CRD's event reached Loom (there may be several
// API servers), and nothing else would tell Loom. A CRD change starts the
// backoff afresh and is followed by one more refresh after its first step
// even if nothing waits, so that a parent that tried its status write too
// early (see retryStatus) tries again. A controller or parent that starts
// to wait signals m.awaited, which starts the backoff if it is not
// running; it stops once nothing waits.
func (m *Manager) rediscover(ctx context.Context, changed <-chan struct{}) {
	logger := klog.FromContext(ctx)
	backoff := discoveryBackoff()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var retry <-chan time.Time // nil while no refresh is due
	refresh, settle := true, false
	for {
		if refresh {
			logger.V(2).Info("Refreshing discovery")
			m.kindsChanged()
		}
		switch {
		case retry != nil: // already due
		case settle || m.awaitsKind():
			timer.Reset(backoff.Step())
			retry = timer.C
		default:
			backoff = discoveryBackoff()
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
			timer.Stop() // no stale tick follows (Go 1.23 timers)
			backoff, retry = discoveryBackoff(), nil
			refresh, settle = true, true
		case <-m.awaited:
			refresh = false
		case <-retry:
			retry = nil
			refresh, settle = true, false
		}
	}
}

// awaitsKind reports whether a controller waits for its parent kind to be
// served, or a parent for a child kind.
func (m *Manager) awaitsKind() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.controllers {
		if c.AwaitsKind() {
			return true
		}
	}
	return false
}

// kindAwaited tells rediscover that a controller or a parent started to
// wait for a kind that is not served.
func (m *Manager) kindAwaited() {
	select {
	case m.awaited <- struct{}{}:
	default:
	}
}
