//go:build e2e

// Package faults tests that Loom survives the faults a real cluster throws
// at it: the API server restarted, etcd compacted under its watches, Loom
// itself killed, a storm of conflicting writes, a parent that always fails
// beside one that never stops changing, an autoscaler owning a field, and
// thousands of objects that are none of Loom's business.
//
// Each test runs bin/loom as users run it, in a process of its own, against
// the local cluster (make cluster), and holds over the whole run: nothing
// lost (every parent Ready with all its children), nothing deleted that
// should stay (children keep their UIDs), and no hot loop (Loom's writes,
// counted by the API server, stay within a budget per parent, and its
// writes and reconciles stop once everything is Ready).
//
// The tests restart cluster components, so they run one at a time, and
// never beside the parallel e2e suite: hack/e2e.sh runs them after it.
package faults

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/loom-operator/loom/test/env"
)

func TestMain(m *testing.M) {
	env.Main(m, env.Options{
		Suite:           "faults",
		Hint:            "The fault tests need the local cluster and bin/loom: run them with `make test-faults` or `make test`.",
		SetupTimeout:    5 * time.Minute,
		NeedBinary:      true,
		NamespacePrefix: "faults-",
		Settle:          true,
	})
}

// clusterScript runs hack/cluster/cluster.sh with args (restart NAME,
// compact) on the same cluster as the tests (the CLUSTER_* port variables
// are inherited), and returns its standard output.
func clusterScript(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(env.From(t).Path("hack", "cluster", "cluster.sh"), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cluster.sh %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	t.Logf("cluster.sh %s:\n%s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
	return strings.TrimSpace(string(out))
}
