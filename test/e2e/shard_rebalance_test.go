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
// go. Counted on the wire: each replica talks to the API server through a
// proxy that counts its requests by verb and resource (apiCounter), as the
// API server's apiserver_request_total does, but for that replica alone;
// and by the replicas' own log of every write they send ("Shard write").
// The API server's own counter adds up every client of the cluster, so it
// is only logged. The three replicas that only gave buckets away
// reconcile none of the parents they keep: their child informers' new
// generations bring no event for children they already held. Every
// replica runs one child informer per child kind ("Watching child kind",
// logged once per kind), not one per bucket: on the per-bucket code each
// replica logged it once per bucket it held parents of, 4 to 13 times per
// kind here.
//
// It runs alone in its package (not parallel), like TestSharded.
func TestShardedRebalanceWritesNothing(t *testing.T) {
	e := newShardEnv(t, 20)
	e.counters = map[string]*apiCounter{}
	rs := e.startN(3)
	e.waitBalanced(t, time.Minute, rs...)
	e.waitConverged(t, 2*time.Minute)
	waitQuiet(t, rs...)
	before := map[string]requestCounts{}
	for _, r := range rs {
		before[r.name] = e.counters[r.name].counts()
	}
	server := apiRequests(t, e)
	moved := time.Now()
	added := e.startN(2)
	all := append(append([]*shardReplica{}, rs...), added...)
	table := e.waitBalanced(t, time.Minute, all...)
	for _, r := range added {
		waitTakeover(t, time.Minute, moved, e.parentsIn(table[r.memberID(t)]), r)
	}
	waitQuiet(t, all...)

	for i, r := range all {
		l := r.log(t)
		var writes []string
		for _, w := range l.writes {
			if w.at.After(moved) {
				writes = append(writes, w.method+" "+w.uid)
			}
		}
		if len(writes) > 0 {
			t.Errorf("%s logged %d writes after the rebalance began, want 0: %s", r.name, len(writes), strings.Join(writes[:min(5, len(writes))], "; "))
		}
		d := e.counters[r.name].counts().sub(before[r.name])
		if w := d.childWrites(); len(w) > 0 {
			t.Errorf("%s sent child writes during the rebalance, want none: %s", r.name, strings.Join(w, "; "))
		}
		total := e.counters[r.name].counts()
		t.Logf("%s during the rebalance: child lists %s, watches %s; since it started: lists %s, watches %s", r.name,
			d.byResource("LIST"), d.byResource("WATCH"), total.byResource("LIST"), total.byResource("WATCH"))
		if i < len(rs) {
			n := 0
			for _, iv := range l.intervals {
				if iv.start.After(moved) {
					n++
				}
			}
			if n > 0 {
				t.Errorf("%s, which only let buckets go, reconciled %d times after the rebalance began, want 0", r.name, n)
			}
		}
		// A replica watches the kinds its parents render: those of the
		// Gadgets only (ConfigMaps) if it holds no MyResource.
		if len(l.childWatches) == 0 {
			t.Errorf("%s watched no child kind", r.name)
		}
		for res, n := range l.childWatches {
			if n != 1 {
				t.Errorf("%s started %d child informers of %s, want 1 (one per kind, whatever buckets it holds)", r.name, n, res)
			}
		}
	}
	d := apiRequests(t, e).sub(server)
	t.Logf("the API server, from every client of the cluster, during the rebalance: child writes %v; deployments: %.0f LIST, %.0f WATCH",
		d.childWrites(), d.verb("LIST", "deployments"), d.verb("WATCH", "deployments"))
	e.waitConverged(t, 30*time.Second)
}

// childResource are the resources of the sharding tests' children.
var childResource = map[string]bool{"configmaps": true, "deployments": true, "services": true}

// requestKey is one series of the API server's apiserver_request_total.
type requestKey struct{ verb, resource, subresource string }

// requestCounts are request counts by series.
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

// childWrites lists the writes of children counted, as "VERB resource: n".
func (c requestCounts) childWrites() []string {
	var out []string
	for k, v := range c {
		switch k.verb {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
			if childResource[k.resource] && v > 0 {
				out = append(out, fmt.Sprintf("%s %s: %.0f", k.verb, k.resource, v))
			}
		}
	}
	sort.Strings(out)
	return out
}

// byResource writes the counts of verb for the child resources, as
// "configmaps=1 deployments=1 services=1".
func (c requestCounts) byResource(verb string) string {
	var out []string
	for _, r := range []string{"configmaps", "deployments", "services"} {
		out = append(out, fmt.Sprintf("%s=%.0f", r, c.verb(verb, r)))
	}
	return strings.Join(out, " ")
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
