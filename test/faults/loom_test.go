//go:build e2e

package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// loomProc is `bin/loom run` in a process of its own, run the way users
// run it: default flags except the kubeconfig, the templates, the metrics
// address and the namespace.
type loomProc struct {
	*testutil.Process
	metricsAddr string
}

// startLoom runs bin/loom run over templates, watching namespace, with
// extra flags added, and waits until it serves /metrics. Its output goes
// to a file in the test's temporary folder; the last lines are logged if
// the test fails.
func startLoom(t *testing.T, templates, namespace string, extra ...string) *loomProc {
	t.Helper()
	e := env.From(t)
	addr := testutil.FreeAddr(t)
	args := append([]string{"run", "--kubeconfig", e.Kubeconfig, "--templates", templates,
		"--metrics-bind-address", addr, "-n", namespace}, extra...)
	log := filepath.Join(t.TempDir(), "loom.log")
	l := &loomProc{Process: testutil.StartProcess(t, log, e.Binary, testutil.WithoutWebhook(args)...), metricsAddr: addr}
	testutil.Eventually(t, 30*time.Second, "loom serves /metrics", func(ctx context.Context) error {
		if done, err := l.Exited(); done {
			return fmt.Errorf("loom exited: %v\n%s", err, l.Tail(20))
		}
		_, err := l.metrics(ctx)
		return err
	})
	t.Logf("loom pid %d, log %s, metrics http://%s/metrics", l.Pid(), log, addr)
	return l
}

// metrics scrapes Loom's /metrics.
func (l *loomProc) metrics(ctx context.Context) (testutil.Metrics, error) {
	return testutil.ScrapeMetrics(ctx, "http://"+l.metricsAddr+"/metrics")
}

// counter sums one of Loom's metrics over the samples that match, failing
// the test if Loom does not answer.
func (l *loomProc) counter(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := l.metrics(ctx)
	if err != nil {
		t.Fatalf("read loom's metrics: %v", err)
	}
	return m.Sum(name, match)
}

// reconciles is loom_reconcile_total, over every kind and result.
func (l *loomProc) reconciles(t *testing.T) float64 { return l.counter(t, "loom_reconcile_total", nil) }

// mustRun fails the test if Loom has exited.
func (l *loomProc) mustRun(t *testing.T) {
	t.Helper()
	if done, err := l.Exited(); done {
		t.Fatalf("loom exited (%v); it must keep running through the fault", err)
	}
}
