package controller

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

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
		if err := m.controllers[gk].NotStarted(); err != nil {
			errs = append(errs, fmt.Errorf("the controller of %s has not started: %s", gk, err))
		}
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
		if err := m.controllers[gk].Stalled(now, bound); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sortedKinds returns the kinds of controllers in order, so that health
// messages are stable.
func sortedKinds(controllers map[schema.GroupKind]*Controller) []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(controllers))
	for gk := range controllers {
		out = append(out, gk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
