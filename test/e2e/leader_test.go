//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// loomProcess is bin/loom run in a process of its own.
type loomProcess struct{ *testutil.Process }

// startLoomProcess runs bin/loom run with args added, and kills it when the
// test ends if it is still running.
func startLoomProcess(t *testing.T, ns string, args ...string) *loomProcess {
	t.Helper()
	e := env.From(t)
	args = append([]string{"run", "--templates", filepath.Join(e.Root, "templates"), "--namespace", ns,
		"--kubeconfig", e.Kubeconfig, "--metrics-bind-address", ""}, args...)
	return &loomProcess{testutil.StartProcess(t, filepath.Join(t.TempDir(), "loom.log"), e.Binary, testutil.WithoutWebhook(args)...)}
}

// stop sends SIGTERM and expects a clean exit.
func (p *loomProcess) stop(t *testing.T, within time.Duration) { t.Helper(); p.Stop(t, within) }

// leading reports whether the process has started reconciling.
func (p *loomProcess) leading() bool { return strings.Contains(p.Output(), "Started workers") }

// Two replicas with --leader-elect: exactly one reconciles. On SIGTERM the
// leader drains, releases the Lease and exits 0, and the other takes over
// within seconds (not the 15 s Lease duration) and reconciles.
func TestLeaderElectionHandsOver(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	elect := []string{"--leader-elect", "--leader-election-namespace", ns, "--leader-election-id", "loom-e2e"}
	a := startLoomProcess(t, ns, elect...)
	eventually(t, 30*time.Second, "the first replica leads", func(context.Context) error {
		if !a.leading() {
			return errNotYet
		}
		return nil
	})
	addrB := freeAddr(t)
	b := startLoomProcess(t, ns, append(elect, "--metrics-bind-address", addrB)...)
	createParentFixture(t, ns, "full")
	waitReplicas(t, ns, "web", 2)
	// b tries to acquire the Lease as soon as it says it will; once a has
	// renewed the Lease after that, b's try has failed against a's hold.
	eventually(t, 30*time.Second, "the second replica tries to acquire the Lease", func(context.Context) error {
		if !strings.Contains(b.Output(), "Attempting to acquire leader lease") {
			return errNotYet
		}
		return nil
	})
	tried := metav1.NowMicro()
	eventually(t, 30*time.Second, "the leader renews its Lease after the second replica tried", func(ctx context.Context) error {
		l, err := e.Kube.CoordinationV1().Leases(ns).Get(ctx, "loom-e2e", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(tried.Time) {
			return errNotYet
		}
		return nil
	})
	if b.leading() {
		t.Fatalf("both replicas reconcile:\n--- a:\n%s\n--- b:\n%s", a.Output(), b.Output())
	}
	leaderIs := func(want float64) func(context.Context) error {
		return func(ctx context.Context) error {
			f, err := scrape(ctx, addrB)
			if err != nil {
				return err
			}
			return wantGauge(f, "loom_leader", nil, want)
		}
	}
	eventually(t, 10*time.Second, "the waiting replica's loom_leader is 0", leaderIs(0))

	a.stop(t, 20*time.Second)
	if !strings.Contains(a.Output(), "Shut down") {
		t.Fatalf("the leader did not drain before exiting:\n%s", a.Output())
	}
	handover := time.Now()
	eventually(t, 10*time.Second, "the second replica takes over", func(context.Context) error {
		if !b.leading() {
			return errNotYet
		}
		return nil
	})
	t.Logf("handover took %s", time.Since(handover).Round(100*time.Millisecond))
	eventually(t, 10*time.Second, "the new leader's loom_leader is 1", leaderIs(1))
	patch := `{"spec":{"replicas":3}}`
	patchSpec(t, ns, "web", patch)
	waitReplicas(t, ns, "web", 3)
	b.stop(t, 20*time.Second)
	lease, err := e.Kube.CoordinationV1().Leases(ns).Get(context.Background(), "loom-e2e", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the Lease is still held by %q after both replicas stopped", *h)
	}
}

// loom run --leader-elect or --sharded whose Lease namespace does not
// exist fails at start, naming the flag, instead of retrying the Lease
// forever and reconciling nothing.
func TestLeaseNamespaceThatDoesNotExist(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	missing := ns + "-missing"
	for _, tt := range []struct {
		name string
		args []string
		flag string
	}{
		{"leader election", []string{"--leader-elect", "--leader-election-namespace", missing}, "--leader-election-namespace"},
		{"sharding", []string{"--sharded", "--shard-namespace", missing}, "--shard-namespace"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startLoomProcess(t, ns, tt.args...)
			select {
			case <-p.Done():
			case <-time.After(30 * time.Second):
				t.Fatalf("loom run %s still runs after 30s:\n%s", strings.Join(tt.args, " "), p.Tail(10))
			}
			if _, err := p.Exited(); err == nil {
				t.Errorf("loom run %s exited 0, want 1", strings.Join(tt.args, " "))
			}
			if out := p.Output(); !strings.Contains(out, `namespace "`+missing+`"`) || !strings.Contains(out, "does not exist") ||
				!strings.Contains(out, "set "+tt.flag) {
				t.Errorf("loom run %s said:\n%s\nwant that namespace %s does not exist, and to set %s", strings.Join(tt.args, " "), p.Tail(10), missing, tt.flag)
			}
		})
	}
}
