//go:build e2e

package e2e

// The sharding tests' replicas (bin/loom run --sharded processes), what
// they say through the shard table, their metrics and their logs, and the
// checks over those: balance, ownership, takeover and no two writers.

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/internal/testutil"
)

// shardReplica is one bin/loom run --sharded process.
type shardReplica struct {
	*testutil.Process
	name, addr string
}

// start runs a replica of the group, with extra flags.
func (e *shardEnv) start(extra ...string) *shardReplica {
	t := e.t
	t.Helper()
	r := &shardReplica{name: "r" + strconv.Itoa(e.next), addr: freeAddr(t)}
	e.next++
	kubeconfig := e.Kubeconfig
	if e.counters != nil {
		c := newAPICounter(t, e.Env, e.logs, r.name)
		e.counters[r.name], kubeconfig = c, c.kubeconfig
	}
	args := append([]string{"run", "--templates", e.templates, "--namespace", e.ns, "--kubeconfig", kubeconfig,
		"--metrics-bind-address", r.addr, "--log-format", "json", "-v=2",
		"--sharded", "--shard-namespace", e.ns, "--shard-group", e.group, "--shard-id-prefix", r.name}, extra...)
	r.Process = testutil.StartProcess(t, filepath.Join(e.logs, r.name+".log"), e.Binary, testutil.WithoutWebhook(args)...)
	return r
}

// startN runs n replicas.
func (e *shardEnv) startN(n int, extra ...string) []*shardReplica {
	e.t.Helper()
	rs := make([]*shardReplica, n)
	for i := range rs {
		rs[i] = e.start(extra...)
	}
	return rs
}

// log parses what the replica logged so far.
func (r *shardReplica) log(t *testing.T) shardLog {
	t.Helper()
	l, err := parseShardLog(r.name, strings.NewReader(r.Output()))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// memberID is the ID the replica last joined the group with.
func (r *shardReplica) memberID(t *testing.T) string {
	t.Helper()
	var id string
	eventually(t, 30*time.Second, r.name+" joins the shard group", func(context.Context) error {
		if id = r.log(t).lastID(); id == "" {
			return errNotYet
		}
		return nil
	})
	return id
}

// signal sends sig to the replica's process.
func (r *shardReplica) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(r.Pid(), sig); err != nil {
		t.Fatalf("%s to %s (pid %d): %v", sig, r.name, r.Pid(), err)
	}
}

// metrics scrapes the replica's /metrics.
func (r *shardReplica) metrics(ctx context.Context) (testutil.Metrics, error) {
	if done, err := r.Exited(); done {
		return nil, fmt.Errorf("%s exited (%v):\n%s", r.name, err, r.Tail(20))
	}
	m, err := testutil.ScrapeMetrics(ctx, "http://"+r.addr+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	return m, nil
}

// table reads the group's shard table.
func (e *shardEnv) table(ctx context.Context) (map[string]bucketSet, error) {
	lease, err := e.Kube.CoordinationV1().Leases(e.ns).Get(ctx, e.group+"-shards", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return parseShardTable(lease.Annotations[shardTableAnnotation])
}

// waitBalanced waits until the table has exactly the members of rs and
// every bucket, each member holding 64/n buckets (or one more), and each
// replica's metrics say so.
func (e *shardEnv) waitBalanced(t *testing.T, timeout time.Duration, rs ...*shardReplica) map[string]bucketSet {
	t.Helper()
	lo := shardBucketCount / len(rs)
	hi := lo
	if shardBucketCount%len(rs) != 0 {
		hi++
	}
	var table map[string]bucketSet
	testutil.Poll(t, 250*time.Millisecond, timeout, fmt.Sprintf("%d replicas hold %d or %d buckets each", len(rs), lo, hi), func(ctx context.Context) error {
		ids := map[string]*shardReplica{}
		for _, r := range rs {
			ids[r.log(t).lastID()] = r
		}
		var err error
		if table, err = e.table(ctx); err != nil {
			return err
		}
		var all bucketSet
		for id, set := range table {
			r := ids[id]
			if r == nil {
				return fmt.Errorf("table %v: member %s is none of the replicas %v", table, id, keys(ids))
			}
			if set.len() < lo || set.len() > hi {
				return fmt.Errorf("table %v: %s holds %d buckets", table, id, set.len())
			}
			m, err := r.metrics(ctx)
			if err != nil {
				return err
			}
			if got := m.Sum("loom_shard_buckets", nil); got != float64(set.len()) {
				return fmt.Errorf("%s: loom_shard_buckets %v, the table says %d", r.name, got, set.len())
			}
			if got := m.Sum("loom_shard_members", nil); got != float64(len(rs)) {
				return fmt.Errorf("%s: loom_shard_members %v, want %d", r.name, got, len(rs))
			}
			all |= set
		}
		if len(table) != len(rs) || all.len() != shardBucketCount {
			return fmt.Errorf("table %v: want %d members holding all %d buckets", table, len(rs), shardBucketCount)
		}
		return nil
	})
	return table
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// waitOwnedByAll waits until each replica caches only its own parents and
// together they cache every parent once: their loom_parents add up to the
// number of parents, and each holds buckets.
func (e *shardEnv) waitOwnedByAll(t *testing.T, rs ...*shardReplica) {
	t.Helper()
	eventually(t, 30*time.Second, "the replicas' loom_parents add up to the parents", func(ctx context.Context) error {
		var sum float64
		var each []string
		for _, r := range rs {
			m, err := r.metrics(ctx)
			if err != nil {
				return err
			}
			n, buckets := m.Sum("loom_parents", nil), m.Sum("loom_shard_buckets", nil)
			if buckets <= 0 {
				return fmt.Errorf("%s holds no bucket", r.name)
			}
			sum += n
			each = append(each, fmt.Sprintf("%s: %v parents in %v buckets", r.name, n, buckets))
		}
		if sum != float64(len(e.parents)) {
			return fmt.Errorf("loom_parents add up to %v, want %d (%s)", sum, len(e.parents), strings.Join(each, "; "))
		}
		t.Logf("owned: %s", strings.Join(each, "; "))
		return nil
	})
}

// logsOf parses the logs of rs.
func logsOf(t *testing.T, rs ...*shardReplica) []shardLog {
	t.Helper()
	out := make([]shardLog, len(rs))
	for i, r := range rs {
		out[i] = r.log(t)
	}
	return out
}

// checkNoTwoWriters fails the test if two processes logged reconciles of
// one parent that shared a moment, unless one of them ran into a lapse of
// its replica's Lease (see excusedByLapse; those it returns), or if a
// replica sent a write for a parent it did not own (writeProblems). It
// also fails if an interval names a member ID its process never joined
// with, or if some parent was never reconciled; and it logs the lapses,
// which a replica that keeps running only has when the API server is too
// slow to renew its Lease in time.
func (e *shardEnv) checkNoTwoWriters(t *testing.T, logs []shardLog) (excused []overlap) {
	t.Helper()
	var ivs []reconcileInterval
	seen := map[string]bool{}
	byProc := map[string]shardLog{}
	writes := 0
	for _, l := range logs {
		byProc[l.proc] = l
		writes += len(l.writes)
		joined := map[string]bool{}
		for _, j := range l.joins {
			joined[j.id] = true
		}
		for _, iv := range l.intervals {
			if !joined[iv.replica] {
				t.Errorf("%s logged a reconcile as member %s, but joined only as %v", l.proc, iv.replica, keys(joined))
			}
			seen[iv.uid] = true
			ivs = append(ivs, iv)
		}
		for _, at := range l.lapses {
			t.Logf("%s's shard Lease lapsed at %s; it joined %d times", l.proc, at.Format(time.RFC3339Nano), len(l.joins))
		}
	}
	for _, p := range e.parents {
		if !seen[p.uid] {
			t.Errorf("no replica logged a reconcile of %s %s (%s)", p.gvr.Resource, p.name, p.uid)
		}
	}
	var bad []string
	for _, o := range overlaps(ivs) {
		if excusedByLapse(o.a, byProc[o.a.proc]) || excusedByLapse(o.b, byProc[o.b.proc]) {
			excused = append(excused, o)
			continue
		}
		bad = append(bad, o.String())
	}
	if len(bad) > 0 {
		t.Errorf("%d pairs of reconciles of one parent by two replicas at once, e.g.:\n%s", len(bad), strings.Join(bad[:min(10, len(bad))], "\n"))
	}
	if p := writeProblems(logs); len(p) > 0 {
		t.Errorf("%d writes for parents the replica did not own, e.g.:\n%s", len(p), strings.Join(p[:min(10, len(p))], "\n"))
	}
	t.Logf("checked %d reconcile intervals of %d parents for overlaps (%d excused: in flight when their replica's Lease lapsed) and %d writes for ownership",
		len(ivs), len(seen), len(excused), writes)
	return excused
}

// parentsIn returns the parents whose bucket is in set.
func (e *shardEnv) parentsIn(set bucketSet) []shardParent {
	var out []shardParent
	for _, p := range e.parents {
		if set.has(bucketOf(p.uid)) {
			out = append(out, p)
		}
	}
	return out
}

// waitTakeover waits until, for every one of parents, one of rs logged a
// reconcile of it that started after since, and returns the earliest such
// start of each.
func waitTakeover(t *testing.T, timeout time.Duration, since time.Time, parents []shardParent, rs ...*shardReplica) map[string]time.Time {
	t.Helper()
	first := map[string]time.Time{}
	testutil.Poll(t, 250*time.Millisecond, timeout, fmt.Sprintf("the other replicas reconcile the %d parents", len(parents)), func(context.Context) error {
		clear(first)
		for _, l := range logsOf(t, rs...) {
			for _, iv := range l.intervals {
				if iv.start.After(since) && (first[iv.uid].IsZero() || iv.start.Before(first[iv.uid])) {
					first[iv.uid] = iv.start
				}
			}
		}
		var missing []string
		for _, p := range parents {
			if first[p.uid].IsZero() {
				missing = append(missing, p.name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d not yet, e.g. %v", len(missing), missing[:min(5, len(missing))])
		}
		return nil
	})
	return first
}

// latest is the latest of the times in m for parents, and the parent's name.
func latest(m map[string]time.Time, parents []shardParent) (time.Time, string) {
	var at time.Time
	var name string
	for _, p := range parents {
		if t := m[p.uid]; t.After(at) {
			at, name = t, p.name
		}
	}
	return at, name
}
