package clusters

import (
	"context"
	"slices"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/childcache"
)

// probe asks the cluster name, every Options.Probe while ctx lasts,
// whether it answers: GET /readyz, which every authenticated user may
// read (system:public-info-viewer). A reconcile whose children there are
// unchanged decides them from the cache and sends the cluster nothing,
// so without the probe a cluster that stops answering would go unnoticed
// until a child changed or the resync came.
func (f *Fleet) probe(ctx context.Context, name string, r *remote, client rest.Interface) {
	every := f.opts.Probe
	if every <= 0 {
		every = 5 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		err := client.Get().AbsPath("/readyz").Do(pctx).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil && !unanswered(err) {
			err = nil // an answer, if not a yes: the reconciles find out more
		}
		f.probed(name, r, err)
	}
}

// probed records what a probe of the cluster name (served by r) found:
// err if it did not answer, nil if it did. When that changes, it reports
// the cluster's reachability (Options.Reachable) and re-reconciles every
// parent that places children there (Options.Enqueue), so that they say
// ClusterUnreachable, or converge again, now.
func (f *Fleet) probed(name string, r *remote, err error) {
	f.mu.Lock()
	if f.remotes[name] != r {
		f.mu.Unlock()
		return // replaced or stopped since
	}
	was := r.unanswered != nil
	r.unanswered = err
	if was == (err != nil) {
		f.mu.Unlock()
		return
	}
	if err == nil {
		r.down, r.until = nil, time.Time{} // it answers: no backoff either
	}
	var parents []childcache.ParentKey
	for _, u := range f.users {
		if slices.Contains(u.clusters, name) {
			parents = append(parents, u.key)
		}
	}
	f.mu.Unlock()
	logger := klog.FromContext(f.ctx)
	if err != nil {
		logger.Info("A workload cluster does not answer", "cluster", name, "parents", len(parents), "err", err)
	} else {
		logger.Info("A workload cluster answers again", "cluster", name, "parents", len(parents))
	}
	if f.opts.Reachable != nil {
		f.opts.Reachable(name, err == nil)
	}
	if f.opts.Enqueue != nil {
		for _, p := range parents {
			f.opts.Enqueue(p)
		}
	}
}
