//go:build e2e

package faults

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// writeKey is one series of the API server's apiserver_request_total
// among the write verbs.
type writeKey struct{ verb, resource, subresource, code string }

func (k writeKey) String() string {
	r := k.resource
	if k.subresource != "" {
		r += "/" + k.subresource
	}
	return fmt.Sprintf("%s %s %s", k.verb, r, k.code)
}

// writes are counts of write requests by series.
type writes map[writeKey]float64

// childResources are the resources Loom's children are made of in these
// tests.
var childResources = map[string]bool{
	"configmaps": true, "services": true, "deployments": true, "secrets": true, "horizontalpodautoscalers": true,
}

// loomWrite reports whether a write is one that only Loom sends in these
// tests: a server-side apply (of a child, or of a parent's status) or a
// delete of a child (a prune). The other clients (the tests,
// kube-controller-manager, the scheduler, kwok) create, update and patch,
// and the namespace controller deletes collections.
func loomWrite(k writeKey) bool {
	return k.verb == "APPLY" || (k.verb == "DELETE" && childResources[k.resource])
}

// sum adds the counts of the series that match.
func (w writes) sum(match func(writeKey) bool) float64 {
	var n float64
	for k, v := range w {
		if match(k) {
			n += v
		}
	}
	return n
}

// sub is what w counted beyond old.
func (w writes) sub(old writes) writes {
	out := writes{}
	for k, v := range w {
		if d := v - old[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// top lists the n largest series that match, for failure messages.
func (w writes) top(n int, match func(writeKey) bool) string {
	var keys []writeKey
	for k := range w {
		if match(k) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return w[keys[i]] > w[keys[j]] })
	var parts []string
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s: %.0f", k, w[k]))
	}
	return strings.Join(parts, "; ")
}

// writeMeter counts the write requests the API server serves, across its
// restarts. It scrapes /metrics every two seconds (and whenever observe is
// called) and adds what each series grew by since the scrape before. After
// a restart (process_start_time_seconds changed) the server's counters
// start again at zero. Writes served after the last scrape before a
// restart are not counted, so counts across a restart are a lower bound
// by at most a moment's writes.
type writeMeter struct {
	e       *env.Env
	mu      sync.Mutex
	started float64 // the API server's process_start_time_seconds
	last    writes  // the counters at the last scrape
	total   writes  // what they grew by since the meter started
}

// newWriteMeter starts a meter; it stops when the test ends.
func newWriteMeter(t *testing.T) *writeMeter {
	t.Helper()
	m := &writeMeter{e: env.From(t), total: writes{}}
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.observe(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = m.observe(ctx) // fails while the API server restarts
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

// observe scrapes the API server once and adds the growth of each series.
func (m *writeMeter) observe(ctx context.Context) error {
	// One scrape at a time, so that the counts are applied in order.
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := m.e.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("read the API server's metrics: %w", err)
	}
	mf, err := testutil.ParseMetrics(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("read the API server's metrics: %w", err)
	}
	cur := writes{}
	mf.Each("apiserver_request_total", func(l map[string]string, v float64) {
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
			cur[writeKey{l["verb"], l["resource"], l["subresource"], l["code"]}] += v
		}
	})
	started := mf.Sum("process_start_time_seconds", nil)
	if m.last != nil {
		base := m.last
		if started != m.started {
			base = writes{} // restarted: its counters began again at 0
		}
		for k, v := range cur.sub(base) {
			m.total[k] += v
		}
	}
	m.started, m.last = started, cur
	return nil
}

// snapshot scrapes once more and returns the counts so far.
func (m *writeMeter) snapshot(t *testing.T) writes {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, "read the API server's metrics", m.observe)
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(writes, len(m.total))
	for k, v := range m.total {
		out[k] = v
	}
	return out
}
