//go:build e2e

package e2e

// loom run --sharded: replicas of bin/loom share the parents of two kinds
// through a shard group of Leases, and no parent is ever reconciled by two
// replicas at once, however replicas join, leave, die or freeze. Each
// replica logs every reconcile's interval ("Reconcile interval") and every
// write it sends ("Shard write"); the tests read those logs, the shard
// table and the replicas' metrics. Each scenario has a namespace and a
// shard group of its own.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// shardLeaseDuration is loom run's --shard-lease-duration default: a
	// replica that stops renewing loses its buckets this long after its
	// last renewal.
	shardLeaseDuration = 6 * time.Second
	// killBound is how soon after a SIGKILL the other replicas must
	// reconcile the dead replica's parents: its Lease expires within
	// shardLeaseDuration, and they notice within a renew interval (2 s).
	killBound = 10 * time.Second
	// termBound is how soon after a SIGTERMed replica exits the others
	// must reconcile its parents: it handed them over before exiting.
	termBound = 2 * time.Second
)

// TestSharded runs the sharding scenarios one after another, and not in
// parallel with the rest of the suite: Go runs it before the parallel
// tests start. Each runs three to five replicas over 80 to 300 parents
// under churn; two of them at once on a 2-CPU machine made the API server
// so slow (a request took seconds) that the replicas could not renew their
// Leases in time and failover took over 30 s, where one at a time takes
// 5 s. The failover bounds are measured on a machine that does nothing
// else, as docs/how-to/sharding.md states them.
func TestSharded(t *testing.T) {
	// Three replicas under spec churn: every parent converges, each
	// replica owns a share, and no two replicas reconcile one parent at
	// once.
	t.Run("ConvergesWithoutTwoWriters", func(t *testing.T) { convergesWithoutTwoWriters(t, 150, 20*time.Second) })
	// The same with --shard-server-filter=false, as against an API server
	// without the ShardedListAndWatch gate (KEP-5866), which ignores a
	// shard selector: the replicas' own filter alone divides the parents.
	t.Run("ConvergesWithoutServerFilter", func(t *testing.T) {
		convergesWithoutTwoWriters(t, 40, 10*time.Second, "--shard-server-filter=false")
	})
	t.Run("SIGKILLFailover", shardedSIGKILLFailover)
	t.Run("SIGTERMHandsOver", shardedSIGTERMHandsOver)
	// The handover bounds from the signal: an edit of every parent the
	// stopped replica held is in their children within 5 s of a SIGTERM,
	// and within the Lease duration plus 5 s of a SIGKILL.
	t.Run("SIGTERMEditsLand", shardedSIGTERMEditsLand)
	t.Run("SIGKILLEditsLand", shardedSIGKILLEditsLand)
	t.Run("SIGSTOPPastTheLease", shardedSIGSTOPPastTheLease)
	t.Run("ScalesThreeFiveTwo", shardedScalesThreeFiveTwo)
}

// convergesWithoutTwoWriters runs three replicas over perKind parents of
// each kind, changes every parent's spec for churn (and at least once),
// and checks that everything converged with no two writers.
func convergesWithoutTwoWriters(t *testing.T, perKind int, churn time.Duration, extra ...string) {
	e := newShardEnv(t, perKind)
	rs := e.startN(3, extra...)
	table := e.waitBalanced(t, time.Minute, rs...)
	balanced := time.Now()
	c := e.churn()
	c.runFor(t, churn, 1)
	c.stop(t)
	e.waitConverged(t, 2*time.Minute)
	e.waitOwnedByAll(t, rs...)
	logs := logsOf(t, rs...)
	for _, l := range logs {
		if len(l.intervals) == 0 {
			t.Errorf("%s logged no reconcile", l.proc)
		}
	}
	e.checkNoTwoWriters(t, logs)
	checkWritesOwned(t, logs, table, balanced)
	checkWhoFiltered(t, !slices.Contains(extra, "--shard-server-filter=false"), rs)
}

// checkWhoFiltered checks who divided the parents: with the shard
// selector sent, the API server (the local cluster serves KEP-5866), so a
// replica never drops a parent it was sent; without it, each replica,
// which says so once per list of its parents.
func checkWhoFiltered(t *testing.T, serverFilter bool, rs []*shardReplica) {
	t.Helper()
	const line = "The API server did not filter parents by shard"
	for _, r := range rs {
		dropped := strings.Contains(r.Output(), line)
		switch {
		case serverFilter && dropped:
			t.Errorf("%s dropped parents the API server sent it: the server ignored the shard selector (is the ShardedListAndWatch gate on?)", r.name)
		case !serverFilter && !dropped:
			t.Errorf("%s never dropped a parent itself, though it sent no shard selector", r.name)
		}
	}
}

// A SIGKILLed replica's parents are reconciled by the others once its
// Lease has expired, within killBound of the kill.
func shardedSIGKILLFailover(t *testing.T) {
	e := newShardEnv(t, 40)
	rs := e.startN(3)
	table := e.waitBalanced(t, time.Minute, rs...)
	c := e.churn()
	c.waitPatches(t, int64(len(e.parents)))
	victim, others := rs[0], rs[1:]
	lost := e.parentsIn(table[victim.memberID(t)])
	killed := time.Now()
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	e.patchAll(t, lost, 1)
	first := waitTakeover(t, 30*time.Second, killed, lost, others...)
	last, name := latest(first, lost)
	took := last.Sub(killed)
	t.Logf("SIGKILL failover: the other replicas reconciled all %d parents of the killed one within %s of the kill (last: %s)",
		len(lost), took.Round(time.Millisecond), name)
	if took >= killBound {
		t.Errorf("SIGKILL failover took %s, want less than %s", took.Round(time.Millisecond), killBound)
	}
	e.settle(t, c, others, rs)
}

// settle waits until the replicas still running (live) hold the buckets
// evenly, then stops the churn and checks what every replica (all) did:
// every parent converges, each live replica owns some, no two reconciled
// one parent at once.
func (e *shardEnv) settle(t *testing.T, c *churner, live, all []*shardReplica) {
	t.Helper()
	e.waitBalanced(t, 30*time.Second, live...)
	e.stopAndCheck(t, c, live, all)
}

// stopAndCheck is settle without the wait for balance.
func (e *shardEnv) stopAndCheck(t *testing.T, c *churner, live, all []*shardReplica) {
	t.Helper()
	c.stop(t)
	e.waitConverged(t, 2*time.Minute)
	e.waitOwnedByAll(t, live...)
	e.checkNoTwoWriters(t, logsOf(t, all...))
}

// A SIGTERMed replica hands its buckets over before it exits: the others
// reconcile its parents within termBound of its exit.
func shardedSIGTERMHandsOver(t *testing.T) {
	e := newShardEnv(t, 40)
	rs := e.startN(3)
	table := e.waitBalanced(t, time.Minute, rs...)
	c := e.churn()
	c.waitPatches(t, int64(len(e.parents)))
	victim, others := rs[0], rs[1:]
	id := victim.memberID(t)
	lost := e.parentsIn(table[id])
	exited := make(chan time.Time, 1)
	go func() { <-victim.Done(); exited <- time.Now() }()
	termed := time.Now()
	victim.signal(t, syscall.SIGTERM)
	e.patchAll(t, lost, 1)
	var exit time.Time
	select {
	case exit = <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit within 30s of SIGTERM:\n%s", victim.name, victim.Tail(40))
	}
	if _, err := victim.Exited(); err != nil {
		t.Fatalf("%s exited with %v after SIGTERM:\n%s", victim.name, err, victim.Tail(40))
	}
	first := waitTakeover(t, 30*time.Second, termed, lost, others...)
	last, name := latest(first, lost)
	t.Logf("SIGTERM handover: %s exited %s after SIGTERM; the other replicas reconciled all %d of its parents %s after it exited (%s after SIGTERM; last: %s)",
		victim.name, exit.Sub(termed).Round(time.Millisecond), len(lost), last.Sub(exit).Round(time.Millisecond), last.Sub(termed).Round(time.Millisecond), name)
	if took := last.Sub(exit); took >= termBound {
		t.Errorf("SIGTERM handover: the last parent was reconciled %s after the exit, want less than %s", took.Round(time.Millisecond), termBound)
	}
	if l := victim.log(t); len(l.lefts) == 0 {
		t.Errorf("%s did not log that it left the shard group", victim.name)
	}
	if _, err := e.Kube.CoordinationV1().Leases(e.ns).Get(context.Background(), id, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease of %s after it exited: %v, want NotFound", id, err)
	}
	e.settle(t, c, others, rs)
}

// A replica frozen (SIGSTOP) past its Lease loses its buckets to the
// others; once it runs again (SIGCONT) it writes nothing for the parents
// it lost, reconciles nothing another replica reconciles, and rejoins
// under a new ID.
func shardedSIGSTOPPastTheLease(t *testing.T) {
	e := newShardEnv(t, 40)
	rs := e.startN(3)
	table := e.waitBalanced(t, time.Minute, rs...)
	victim, others := rs[1], []*shardReplica{rs[0], rs[2]}
	oldID := victim.memberID(t)
	lost := e.parentsIn(table[oldID])
	churned := time.Now()
	c := e.churn()
	eventually(t, 30*time.Second, victim.name+" reconciles under churn", func(context.Context) error {
		for _, iv := range victim.log(t).intervals {
			if iv.start.After(churned) {
				return nil
			}
		}
		return errNotYet
	})
	// Work for it in flight and queued when it freezes.
	e.patchAll(t, lost, 1)
	stopped := time.Now()
	victim.signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { _ = syscall.Kill(victim.Pid(), syscall.SIGCONT) })
	lease, err := e.Kube.CoordinationV1().Leases(e.ns).Get(context.Background(), oldID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expires := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
	e.waitBalanced(t, 30*time.Second, others...)
	first := waitTakeover(t, 30*time.Second, stopped, lost, others...)
	if early, name := earliest(first, lost); early.Before(expires) {
		t.Errorf("%s was reconciled by another replica at %s, before the frozen replica's Lease expired at %s",
			name, early.Format(time.RFC3339Nano), expires.Format(time.RFC3339Nano))
	}
	resumed := time.Now()
	t.Logf("%s frozen for %s; its Lease expired %s after SIGSTOP", victim.name, resumed.Sub(stopped).Round(time.Millisecond), expires.Sub(stopped).Round(time.Millisecond))
	victim.signal(t, syscall.SIGCONT)
	var newID string
	eventually(t, 30*time.Second, victim.name+" rejoins under a new ID", func(context.Context) error {
		for _, j := range victim.log(t).joins {
			if j.at.After(resumed) && j.id != oldID {
				newID = j.id
				return nil
			}
		}
		return errNotYet
	})
	e.waitBalanced(t, 30*time.Second, rs...)
	c.stop(t)
	e.waitConverged(t, 2*time.Minute)
	e.waitOwnedByAll(t, rs...)

	logs := logsOf(t, rs...)
	vl := logs[1]
	after := 0
	for _, w := range vl.writes {
		if w.at.After(resumed) {
			after++
		}
	}
	for _, o := range e.checkNoTwoWriters(t, logs) {
		for _, iv := range []reconcileInterval{o.a, o.b} {
			if iv.proc == victim.name && iv.start.After(resumed) {
				t.Errorf("a reconcile of %s that started after SIGCONT overlaps another replica's: %s", victim.name, o)
			}
		}
	}
	if len(vl.lapses) == 0 {
		t.Errorf("%s did not log that its Lease lapsed", victim.name)
	}
	t.Logf("%s after SIGCONT: %d writes sent (each checked), %d refused by the ownership guard; rejoined as %s", victim.name, after, len(vl.refused), newID)
}

// Three replicas become five, then two, under churn: the buckets spread
// evenly at each step, and every parent converges with no two writers.
func shardedScalesThreeFiveTwo(t *testing.T) {
	e := newShardEnv(t, 40)
	rs := e.startN(3)
	e.waitBalanced(t, time.Minute, rs...)
	c := e.churn()
	rs = append(rs, e.startN(2)...)
	e.waitBalanced(t, time.Minute, rs...)
	left, stay := rs[:3], rs[3:]
	for _, r := range left {
		r.signal(t, syscall.SIGTERM)
	}
	for _, r := range left {
		select {
		case <-r.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not exit within 30s of SIGTERM:\n%s", r.name, r.Tail(40))
		}
		if _, err := r.Exited(); err != nil {
			t.Errorf("%s exited with %v after SIGTERM:\n%s", r.name, err, r.Tail(40))
		}
	}
	e.waitBalanced(t, 30*time.Second, stay...)
	c.waitPatches(t, c.patches.Load()+int64(len(e.parents)))
	e.stopAndCheck(t, c, stay, rs)
}

// checkWritesOwned fails the test if a replica sent a write, after since,
// for a parent outside its buckets in table, the table when the group had
// settled. Writes after the first lapse of any replica are left out: the
// table changed then (checkNoTwoWriters checks those).
func checkWritesOwned(t *testing.T, logs []shardLog, table map[string]bucketSet, since time.Time) {
	t.Helper()
	var until time.Time
	for _, l := range logs {
		for _, at := range l.lapses {
			if at.After(since) && (until.IsZero() || at.Before(until)) {
				until = at
			}
		}
	}
	n := 0
	for _, l := range logs {
		h := holdings(l)
		var bad []string
		for _, w := range l.writes {
			if !w.at.After(since) || (!until.IsZero() && w.at.After(until)) {
				continue
			}
			n++
			id := heldWhen(h, w.at).id
			if b := bucketOf(w.uid); !table[id].has(b) {
				bad = append(bad, fmt.Sprintf("%s %s at %s as %s (bucket %d; the table gives it %s)", w.method, w.uid, w.at.Format(time.RFC3339Nano), id, b, table[id]))
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s wrote for %d parents outside its buckets in the table, e.g. %s", l.proc, len(bad), strings.Join(bad[:min(5, len(bad))], "; "))
		}
	}
	t.Logf("checked %d writes against the settled shard table", n)
}

// earliest is the earliest of the times in m for parents, and the
// parent's name.
func earliest(m map[string]time.Time, parents []shardParent) (time.Time, string) {
	var at time.Time
	var name string
	for _, p := range parents {
		if t := m[p.uid]; !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at, name = t, p.name
		}
	}
	return at, name
}
