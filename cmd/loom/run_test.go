package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loom-operator/loom/internal/version"
)

// loom run's registry has the shard metrics without --sharded too, at 0,
// so that the dashboard's and the alerts' series exist for every Loom.
func TestRegistryHasShardMetricsUnsharded(t *testing.T) {
	reg, metrics := newRegistry()
	if metrics == nil {
		t.Fatal("newRegistry returned no shard metrics for the member to report on")
	}
	want := `
# HELP loom_shard_buckets Buckets of parents (of 64) this replica holds and may reconcile; 0 without --sharded.
# TYPE loom_shard_buckets gauge
loom_shard_buckets 0
# HELP loom_shard_members Live members of the shard group, as this replica last saw them; 0 without --sharded.
# TYPE loom_shard_members gauge
loom_shard_members 0
# HELP loom_shard_moves_total Buckets this replica claimed, released (to another replica or on exit) or dropped when its own Lease lapsed; 0 without --sharded.
# TYPE loom_shard_moves_total counter
loom_shard_moves_total{direction="claim"} 0
loom_shard_moves_total{direction="lapse"} 0
loom_shard_moves_total{direction="release"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"loom_shard_buckets", "loom_shard_members", "loom_shard_moves_total"); err != nil {
		t.Error(err)
	}
}

// loom run's registry has loom_build_info, as Prometheus exporters have
// their build info: 1, labelled with the version, the VCS revision and
// the Go version `loom version` prints.
func TestRegistryHasBuildInfo(t *testing.T) {
	info := version.Get()
	reg, _ := newRegistry()
	want := fmt.Sprintf(`
# HELP loom_build_info Always 1; its labels say which build of Loom runs: the version, the VCS revision and the Go version (as loom version prints them).
# TYPE loom_build_info gauge
loom_build_info{goversion=%q,revision=%q,version=%q} 1
`, info.GoVersion, info.Revision, info.Version)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "loom_build_info"); err != nil {
		t.Error(err)
	}
	// A release build's labels.
	reg = prometheus.NewRegistry()
	reg.MustRegister(buildInfoGauge(version.Info{Version: "v1.2.3", Revision: "0123abc", GoVersion: "go1.26.8"}))
	want = `
# HELP loom_build_info Always 1; its labels say which build of Loom runs: the version, the VCS revision and the Go version (as loom version prints them).
# TYPE loom_build_info gauge
loom_build_info{goversion="go1.26.8",revision="0123abc",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "loom_build_info"); err != nil {
		t.Error(err)
	}
}

// Every --kubeconfig says where the kubeconfig comes from without it, in
// client-go's order: $KUBECONFIG, ~/.kube/config, then in-cluster.
func TestKubeconfigHelpNamesTheDefaults(t *testing.T) {
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			if f := fs.Lookup("kubeconfig"); f != nil {
				seen++
				if !strings.Contains(f.Usage, "$KUBECONFIG, then ~/.kube/config, then in-cluster") {
					t.Errorf("loom %s --kubeconfig: %q does not name $KUBECONFIG, ~/.kube/config and in-cluster in order", c.Name(), f.Usage)
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	if seen < 5 {
		t.Errorf("found --kubeconfig on %d commands, want at least 5 (run, diff, rollout, crd, version)", seen)
	}
}

// --context picks a context of the kubeconfig, as kubectl's does, on every
// command that reaches a cluster.
func TestContextFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a.example:6443"}}
- {name: b, cluster: {server: "https://b.example:6443"}}
users:
- {name: u, user: {token: x}}
contexts:
- {name: a, context: {cluster: a, user: u}}
- {name: b, context: {cluster: b, user: u}}
current-context: a
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	for ctx, want := range map[string]string{"": "https://a.example:6443", "b": "https://b.example:6443"} {
		cfg, err := restConfig(kubeTarget{Path: path, Context: ctx})
		if err != nil {
			t.Fatalf("--context %q: %v", ctx, err)
		}
		if cfg.Host != want {
			t.Errorf("--context %q: host %s, want %s", ctx, cfg.Host, want)
		}
	}
	if _, err := restConfig(kubeTarget{Path: path, Context: "nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("--context nope: %v, want an error naming it", err)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			if fs.Lookup("kubeconfig") != nil && fs.Lookup("context") == nil {
				t.Errorf("loom %s has --kubeconfig but no --context", c.Name())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}
