package controller

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// progress is when a controller's workers last moved: took a parent off
// the queue, or finished reconciling one. Its zero value is the zero time.
type progress struct{ at atomic.Int64 } // Unix nanoseconds; 0 for never

func (p *progress) mark(now time.Time) { p.at.Store(now.UnixNano()) }

func (p *progress) last() time.Time {
	if n := p.at.Load(); n != 0 {
		return time.Unix(0, n).UTC()
	}
	return time.Time{}
}

// startResult is why a controller's last start failed.
type startResult struct{ err error }

// Ready reports whether Loom is ready to reconcile: Run has loaded the
// template sets, the CRD cache has synced, and every set's controller
// has synced its parent cache and started its workers, and Loom holds
// every RBAC permission its running sets need (identity.Permissions: a
// missing one is named here). A controller whose
// parent kind has no CRD does not hold readiness back: its CRD may come
// much later, or never, and the controller starts when it comes; nothing
// an orchestrator does with an unready Loom would help it.
func (m *Manager) Ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil {
		return errors.New("the template sets are not loaded yet")
	}
	var errs []error
	if err := m.perms.Err(); err != nil {
		errs = append(errs, err)
	}
	if m.crds == nil {
		return errors.Join(append(errs, errors.New("the CRD cache has not synced yet"))...)
	}
	for _, gk := range sortedKinds(m.controllers) {
		c := m.controllers[gk]
		if c.running.Load() {
			continue
		}
		why := "its parent cache has not synced yet"
		if r := c.startErr.Load(); r != nil {
			if errors.Is(r.err, errNotServed) {
				continue
			}
			why = r.err.Error()
		}
		errs = append(errs, fmt.Errorf("the controller of %s has not started: %s", gk, why))
	}
	return errors.Join(errs...)
}

// Live reports whether the workers are making progress. A controller is
// wedged when parents are queued (ready to be reconciled now: those
// waiting out a backoff are not counted) and its workers have neither
// taken nor finished a reconcile for longer than twice the reconcile
// timeout. The timeout ends every reconcile whose requests honour their
// context, a request the API server never answers included, so a busy
// controller moves at least that often; an idle one has an empty queue.
// Only a worker stuck in something that ignores its context (a deadlock,
// a call without one) makes Live fail, and a restart is then the cure.
func (m *Manager) Live(now time.Time) error {
	bound := 2 * m.opts.ReconcileTimeout
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, gk := range sortedKinds(m.controllers) {
		c := m.controllers[gk]
		if !c.running.Load() {
			continue // running orders the read of c.queue after start's write
		}
		n := c.queue.Len()
		if since := now.Sub(c.progress.last()); n > 0 && since > bound {
			errs = append(errs, fmt.Errorf("the workers of %s have made no progress for %s with %d parents queued (the bound is %s)",
				gk, since, n, bound))
		}
	}
	return errors.Join(errs...)
}

// sortedKinds returns the kinds of controllers in order, so that health
// messages are stable.
func sortedKinds(controllers map[schema.GroupKind]*parentController) []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(controllers))
	for gk := range controllers {
		out = append(out, gk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
