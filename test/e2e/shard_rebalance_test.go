//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loom-operator/loom/internal/testutil"
)

// A rebalance from three sharded replicas to five, over converged parents,
// sends no child write: the two new replicas take their buckets over and
// find every child already right, and the three others only let buckets
// go. Counted twice: by the replicas' own log of every write they send
// ("Shard write"), and by the API server (apiserver_request_total for the
// children's resources). The three replicas that only gave buckets away
// reconcile none of the parents they keep: their child informers' new
// generations bring no event for children they already held. Every
// replica runs one child informer per child kind ("Watching child kind",
// logged once per kind), not one per bucket: on the per-bucket code each
// replica logged it once per bucket it held, 13 to 22 times per kind.
//
// It runs alone in its package (not parallel), like TestSharded, so that
// the API server's counts are this test's; they are cluster-wide all the
// same, which is why they count only the verbs Loom sends children
// (APPLY, PATCH, DELETE), not the POSTs of other namespaces' ConfigMaps.
func TestShardedRebalanceWritesNothing(t *testing.T) {
	e := newShardEnv(t, 20)
	rs := e.startN(3)
	e.waitBalanced(t, time.Minute, rs...)
	e.waitConverged(t, 2*time.Minute)
	waitQuiet(t, rs...)
	before := apiRequests(t, e)
	moved := time.Now()
	added := e.startN(2)
	all := append(append([]*shardReplica{}, rs...), added...)
	table := e.waitBalanced(t, time.Minute, all...)
	for _, r := range added {
		waitTakeover(t, time.Minute, moved, e.parentsIn(table[r.memberID(t)]), r)
	}
	waitQuiet(t, all...)
	after := apiRequests(t, e)

	logs := logsOf(t, all...)
	for i, l := range logs {
		var writes []string
		for _, w := range l.writes {
			if w.at.After(moved) {
				writes = append(writes, w.method+" "+w.uid)
			}
		}
		if len(writes) > 0 {
			t.Errorf("%s sent %d writes after the rebalance began, want 0: %s", l.proc, len(writes), strings.Join(writes[:min(5, len(writes))], "; "))
		}
		if i < len(rs) {
			n := 0
			for _, iv := range l.intervals {
				if iv.start.After(moved) {
					n++
				}
			}
			if n > 0 {
				t.Errorf("%s, which only let buckets go, reconciled %d times after the rebalance began, want 0", l.proc, n)
			}
		}
		// A replica watches the kinds its parents render: those of the
		// Gadgets only (ConfigMaps) if it holds no MyResource.
		if len(l.childWatches) == 0 {
			t.Errorf("%s watched no child kind", l.proc)
		}
		for res, n := range l.childWatches {
			if n != 1 {
				t.Errorf("%s started %d child informers of %s, want 1 (one per kind, whatever buckets it holds)", l.proc, n, res)
			}
		}
	}
	delta := after.sub(before)
	var childWrites []string
	for k, v := range delta {
		if k.subresource == "" && childResource[k.resource] && (k.verb == "APPLY" || k.verb == "PATCH" || k.verb == "DELETE") && v > 0 {
			childWrites = append(childWrites, fmt.Sprintf("%s %s: %.0f", k.verb, k.resource, v))
		}
	}
	sort.Strings(childWrites)
	if len(childWrites) > 0 {
		t.Errorf("the API server counted child writes during the rebalance, want none: %s", strings.Join(childWrites, "; "))
	}
	t.Logf("during the rebalance the API server counted, for deployments: %.0f LIST, %.0f WATCH, %.0f POST, %.0f PUT",
		delta.verb("LIST", "deployments"), delta.verb("WATCH", "deployments"), delta.verb("POST", "deployments"), delta.verb("PUT", "deployments"))
	e.waitConverged(t, 30*time.Second)
}

// childResource are the resources of the sharding tests' children.
var childResource = map[string]bool{"configmaps": true, "deployments": true, "services": true}

// requestKey is one series of the API server's apiserver_request_total.
type requestKey struct{ verb, resource, subresource string }

// requestCounts are the API server's request counts by series.
type requestCounts map[requestKey]float64

// sub is what c counted beyond old.
func (c requestCounts) sub(old requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		if d := v - old[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// verb is the count of verb requests for resource, no subresource.
func (c requestCounts) verb(verb, resource string) float64 {
	return c[requestKey{verb: verb, resource: resource}]
}

// apiRequests reads the API server's apiserver_request_total, summed over
// codes and scopes.
func apiRequests(t *testing.T, e *shardEnv) requestCounts {
	t.Helper()
	out := requestCounts{}
	eventually(t, 30*time.Second, "read the API server's metrics", func(ctx context.Context) error {
		raw, err := e.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return err
		}
		m, err := testutil.ParseMetrics(bytes.NewReader(raw))
		if err != nil {
			return err
		}
		clear(out)
		m.Each("apiserver_request_total", func(l map[string]string, v float64) {
			out[requestKey{l["verb"], l["resource"], l["subresource"]}] += v
		})
		return nil
	})
	return out
}

// quietFor is how long the replicas must log no reconcile and no write to
// count as quiet: a child event that a moved informer routes reaches its
// parent's queue within milliseconds, and a reconcile of these parents
// takes tens of them, so three seconds of nothing is many times either.
const quietFor = 3 * time.Second

// waitQuiet waits until rs have logged no reconcile and no write for
// quietFor.
func waitQuiet(t *testing.T, rs ...*shardReplica) {
	t.Helper()
	last, since := -1, time.Now()
	testutil.Poll(t, 250*time.Millisecond, time.Minute, fmt.Sprintf("the replicas log nothing for %s", quietFor), func(context.Context) error {
		n := 0
		for _, l := range logsOf(t, rs...) {
			n += len(l.intervals) + len(l.writes)
		}
		if n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) < quietFor {
			return errNotYet
		}
		return nil
	})
}
