package member

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/shard"
)

// tableName is the name of the group's table Lease.
func (m *Member) tableName() string { return m.opts.Group + "-shards" }

// view is what the Lease cache says now: the live members (this one
// included while its Lease is valid), the expired ones to fence, the
// members the table names whose Lease the cache does not hold (to ask the
// API server about), the gone members, whose buckets may be claimed, and
// the table. wake is how long until the view changes by time alone (a
// live member expires, or a gone one's deadline passes), 0 if nothing
// will: Run plans again then, not at its next tick.
type view struct {
	live    []string
	expired []*coordinationv1.Lease
	missing []string
	gone    []string
	table   *coordinationv1.Lease
	wake    time.Duration
}

// soon makes v wake at (on the member's clock) if that is in the future
// and earlier than it would otherwise.
func (v *view) soon(at, now time.Duration) {
	if d := at - now; d > 0 && (v.wake == 0 || d < v.wake) {
		v.wake = d
	}
}

// observe reads the cache and notes when each member's Lease changed.
func (m *Member) observe() view {
	var v view
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	present := map[string]bool{}
	for _, obj := range m.store.List() {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok {
			continue
		}
		switch {
		case l.Labels[LabelRole] == "table" && l.Name == m.tableName():
			v.table = l
		case l.Labels[LabelRole] == "member" && l.Name != m.id:
			present[l.Name] = true
			s, ok := m.seen[l.Name]
			if ok && s.gone && s.rv == l.ResourceVersion {
				continue // the version this replica fenced: the cache lags
			}
			if !ok || s.rv != l.ResourceVersion {
				s = seen{rv: l.ResourceVersion, at: now, duration: m.durationOf(l)}
				m.seen[l.Name] = s
			}
			if now-s.at < s.duration {
				v.live = append(v.live, l.Name)
				v.soon(s.deadline(), now)
			} else {
				v.expired = append(v.expired, l)
			}
		}
	}
	// The cache may not have caught up with this replica's own table
	// writes yet: it then holds a version one of them was based on.
	rv := ""
	if v.table != nil {
		rv = v.table.ResourceVersion
	}
	if m.wrote != nil && slices.Contains(m.behind, rv) {
		v.table = m.wrote
	} else {
		m.wrote, m.behind = nil, nil
	}
	// A member the table names stays remembered while its Lease is
	// missing: until this replica has made sure the Lease is gone and
	// the member's deadline has passed, its buckets stay with it.
	named := m.named(v.table)
	for name := range m.seen {
		if !present[name] && !named[name] {
			delete(m.seen, name)
		}
	}
	for name := range named {
		switch s, ok := m.seen[name]; {
		case name == m.id:
		case ok && s.gone:
			if now >= s.deadline() {
				v.gone = append(v.gone, name)
			} else {
				v.soon(s.deadline(), now)
			}
		case !present[name]:
			v.missing = append(v.missing, name)
		}
	}
	sort.Strings(v.missing)
	sort.Strings(v.gone)
	v.live = append(v.live, m.id)
	sort.Strings(v.live)
	return v
}

// durationOf is how long a member's Lease counts as live after a renewal
// is seen: its own leaseDurationSeconds, or this replica's LeaseDuration.
func (m *Member) durationOf(l *coordinationv1.Lease) time.Duration {
	if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0 {
		return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return m.opts.LeaseDuration
}

// named returns the members table names; none if it cannot be read (the
// rebalance then stops and says why).
func (m *Member) named(table *coordinationv1.Lease) map[string]bool {
	t, err := m.decode(table)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, name := range t {
		if name != "" {
			out[name] = true
		}
	}
	return out
}

// rebalance fences expired members, then claims and releases buckets as
// shard.Plan says, in one compare-and-swap update of the table.
func (m *Member) rebalance(ctx context.Context, logger klog.Logger) {
	v := m.observe()
	for _, l := range v.expired {
		m.fence(ctx, logger, l)
	}
	for _, name := range v.missing {
		m.confirmGone(ctx, logger, name)
	}
	if len(v.expired) > 0 || len(v.missing) > 0 {
		v = m.observe() // a fence that met a renewal made that member live
	}
	m.wakeIn(v.wake)
	m.opts.Metrics.members(len(v.live))
	t, err := m.decode(v.table)
	if err != nil {
		logger.Error(err, "Cannot read the shard table; holding what this replica holds", "lease", m.opts.Namespace+"/"+m.tableName())
		return
	}
	self := m.ID()
	mine := t.Of(self)
	held := shard.Set(m.held.Load())
	if lost := held.Minus(mine); lost != 0 {
		// Only this replica removes its own entries; a table that lost
		// them was rewritten by hand. Stop at once rather than argue.
		logger.Error(nil, "The shard table no longer names buckets this replica holds; dropping them", "buckets", lost.String())
		m.takeAway(lost)
		m.opts.Metrics.moved("release", lost)
		m.notify(shard.Set(m.held.Load()))
	}
	claim, release := shard.Plan(t, self, v.live, v.gone)
	// Entries already naming this replica that it does not hold (after a
	// release whose table update failed) are confirmed by the same update.
	claim = claim.Union(mine.Minus(shard.Set(m.held.Load())).Minus(release))
	if claim == 0 && release == 0 {
		return
	}
	if release != 0 {
		// No new work starts for these; the work in flight finishes
		// (and may write), then they are let go.
		update(&m.accept, func(s shard.Set) shard.Set { return s.Minus(release) })
		if !m.drain(ctx, logger, release) {
			return // lapsed: the next step drops everything
		}
		m.takeAway(release)
		m.notify(shard.Set(m.held.Load()))
	}
	next := t
	for _, b := range release.Buckets() {
		next[b] = ""
	}
	for _, b := range claim.Buckets() {
		next[b] = self
	}
	if err := m.writeTable(ctx, v.table, next); err != nil {
		logger.V(2).Info("Shard table update failed; trying again", "err", err)
		return
	}
	m.opts.Metrics.moved("release", release)
	if claim != 0 {
		m.give(claim)
		m.opts.Metrics.moved("claim", claim.Minus(mine))
		m.notify(shard.Set(m.held.Load()))
	}
	logger.Info("Shard buckets moved", "id", self, "claimed", claim.String(), "released", release.String(),
		"holds", shard.Set(m.held.Load()).String(), "members", len(v.live))
}

// fence deletes an expired member's Lease, on condition that it is still
// the version seen expire: a member that renewed meanwhile is kept. Only
// a delete that succeeded or found the Lease gone makes the member gone;
// one that failed otherwise (a timeout, 429, 5xx) leaves its buckets
// where they are until a later fence succeeds.
func (m *Member) fence(ctx context.Context, logger klog.Logger, l *coordinationv1.Lease) {
	rv := l.ResourceVersion
	rctx, cancel := context.WithTimeout(ctx, m.opts.RenewInterval)
	defer cancel()
	err := m.leases.Delete(rctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv, UID: &l.UID}})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		logger.Info("Fenced an expired shard member", "member", l.Name)
		m.mu.Lock()
		s := m.seen[l.Name]
		s.rv, s.gone = rv, true
		m.seen[l.Name] = s
		m.mu.Unlock()
	case apierrors.IsConflict(err):
		m.mu.Lock()
		delete(m.seen, l.Name) // seen again, live, at its new version
		m.mu.Unlock()
	default:
		logger.V(2).Info("Cannot fence an expired shard member", "member", l.Name, "err", err)
	}
}

// confirmGone asks the API server for the Lease of a member the table
// names and the cache does not hold (deleted by hand, say). Not found, the
// member is gone, and may write until its deadline: LeaseDuration after
// the renewal this replica last saw, or after now if it saw none (the
// member cannot renew a deleted Lease). Found, the cache lags: the Lease
// counts as seen, and is fenced once it expired.
func (m *Member) confirmGone(ctx context.Context, logger klog.Logger, name string) {
	rctx, cancel := context.WithTimeout(ctx, m.opts.RenewInterval)
	l, err := m.leases.Get(rctx, name, metav1.GetOptions{})
	cancel()
	now := m.now()
	switch {
	case apierrors.IsNotFound(err):
		m.mu.Lock()
		s, ok := m.seen[name]
		if !ok {
			s = seen{at: now, duration: m.opts.LeaseDuration}
		}
		s.gone = true
		m.seen[name] = s
		m.mu.Unlock()
		logger.Info("A shard member's Lease is gone; its buckets move once it can no longer write",
			"member", name, "after", (s.deadline() - now).Round(time.Millisecond).String())
	case err != nil:
		logger.V(2).Info("Cannot tell whether a shard member's Lease is gone", "member", name, "err", err)
	default:
		m.mu.Lock()
		s, ok := m.seen[name]
		if !ok || s.rv != l.ResourceVersion || s.gone {
			s = seen{rv: l.ResourceVersion, at: now, duration: m.durationOf(l)}
			m.seen[name] = s
		}
		m.mu.Unlock()
		if now >= s.deadline() {
			m.fence(ctx, logger, l)
		}
	}
}

func (m *Member) decode(table *coordinationv1.Lease) (shard.Table, error) {
	if table == nil {
		return shard.Table{}, nil
	}
	t, err := shard.DecodeTable(table.Annotations[AnnotationTable])
	if err != nil {
		return t, fmt.Errorf("annotation %s: %w", AnnotationTable, err)
	}
	return t, nil
}

// writeTable stores next in the table Lease: an update conditioned on the
// resourceVersion of cur, or a create when there is none.
func (m *Member) writeTable(ctx context.Context, cur *coordinationv1.Lease, next shard.Table) error {
	rctx, cancel := context.WithTimeout(ctx, m.opts.RenewInterval)
	defer cancel()
	if cur == nil {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: m.tableName(), Namespace: m.opts.Namespace,
			Labels:      map[string]string{LabelGroup: m.opts.Group, LabelRole: "table"},
			Annotations: map[string]string{AnnotationTable: next.Encode()},
		}}
		created, err := m.leases.Create(rctx, lease, metav1.CreateOptions{})
		if err == nil {
			m.mu.Lock()
			m.wrote, m.behind = created, append(m.behind, "")
			m.mu.Unlock()
		}
		return err
	}
	lease := cur.DeepCopy()
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[AnnotationTable] = next.Encode()
	updated, err := m.leases.Update(rctx, lease, metav1.UpdateOptions{})
	if err == nil {
		m.mu.Lock()
		m.wrote, m.behind = updated, append(m.behind, cur.ResourceVersion)
		m.mu.Unlock()
	}
	return err
}

// takeAway removes buckets from the accepted and the held sets.
func (m *Member) takeAway(buckets shard.Set) {
	update(&m.accept, func(s shard.Set) shard.Set { return s.Minus(buckets) })
	update(&m.held, func(s shard.Set) shard.Set { return s.Minus(buckets) })
}

// give adds buckets to the held and the accepted sets.
func (m *Member) give(buckets shard.Set) {
	update(&m.held, func(s shard.Set) shard.Set { return s.Union(buckets) })
	update(&m.accept, func(s shard.Set) shard.Set { return s.Union(buckets) })
}

// update changes a set atomically.
func update(a *atomic.Uint64, fn func(shard.Set) shard.Set) {
	for {
		old := a.Load()
		if a.CompareAndSwap(old, uint64(fn(shard.Set(old)))) {
			return
		}
	}
}

// leave hands everything over: nothing new starts, the work in flight
// finishes, the table forgets this replica, and its Lease goes. The others
// claim its buckets once they see both, so those two requests come first:
// the table as the Lease cache holds it (a GET only after a conflict), and
// the subscribers (the Manager stopping its caches) are told after.
func (m *Member) leave(ctx context.Context, logger klog.Logger) error {
	m.accept.Store(0)
	m.drain(ctx, logger, shard.All()) // if the Lease lapsed meanwhile, the writes in flight are refused
	held := shard.Set(m.held.Swap(0))
	self := m.ID()
	if err := m.releaseAll(ctx, self); err != nil {
		logger.Error(err, "Cannot hand this replica's buckets over; others take them once its Lease expires", "id", self)
	}
	m.opts.Metrics.moved("release", held)
	rctx, cancel := context.WithTimeout(ctx, m.opts.RenewInterval)
	defer cancel()
	if derr := m.leases.Delete(rctx, self, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
		logger.Error(derr, "Cannot delete this replica's shard Lease; it expires", "id", self)
	}
	m.notify(0)
	logger.Info("Left the shard group", "id", self, "released", held.String())
	return nil
}

// releaseAll frees every bucket the table gives self: first in the table
// the Lease cache holds, then, after a conflict or another failure, in
// the one the API server returns; up to five tries.
func (m *Member) releaseAll(ctx context.Context, self string) error {
	cur := m.observe().table
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 || cur == nil {
			rctx, cancel := context.WithTimeout(ctx, m.opts.RenewInterval)
			cur, err = m.leases.Get(rctx, m.tableName(), metav1.GetOptions{})
			cancel()
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				continue
			}
		}
		var t shard.Table
		if t, err = m.decode(cur); err != nil {
			return err
		}
		mine := t.Of(self)
		if mine == 0 {
			return nil
		}
		for _, b := range mine.Buckets() {
			t[b] = ""
		}
		if err = m.writeTable(ctx, cur, t); err == nil {
			return nil
		}
	}
	return err
}

func isGone(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsConflict(err) }
