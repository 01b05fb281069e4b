package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/internal/clusteradmin"
)

// tokenKubeconfig writes a kubeconfig of one cluster, w1, and returns its
// path: old replaced by new in it, if given.
func tokenKubeconfig(t *testing.T, old, new string) string {
	t.Helper()
	kc := `apiVersion: v1
kind: Config
clusters: [{name: w1, cluster: {server: "https://w1.example:6443", insecure-skip-tls-verify: true}}]
users: [{name: w1-admin, user: {token: w1-token}}]
contexts: [{name: w1, context: {cluster: w1, user: w1-admin}}]
current-context: w1
`
	if !strings.Contains(kc, old) {
		t.Fatalf("fixture has no %q", old)
	}
	return writeFiles(t, t.TempDir(), map[string]string{"config": strings.Replace(kc, old, new, 1)}) + "/config"
}

// A dry run prints the Secret with its credentials redacted
// (clusteradmin.Redact), and sends no request: the management cluster's
// kubeconfig is not even read.
func TestClusterAddDryRun(t *testing.T) {
	path := tokenKubeconfig(t, "user: {token: w1-token}",
		"user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, env: [{name: AWS_SECRET, value: hunter2}], interactiveMode: Never}}")
	out, stderr, err := executeSplit(t, "", "cluster", "add", "w1", "--from-kubeconfig", path, "--allow-kubeconfig-exec", "--dry-run",
		"--kubeconfig", filepath.Join(t.TempDir(), "absent"), "-n", "loom", "--label", "env=prod")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, stderr)
	}
	if strings.Contains(out, "hunter2") {
		t.Errorf("the dry run shows the credential:\n%s", out)
	}
	for _, want := range []string{"# dry run", "name: w1\n", "namespace: loom\n", "loom.dev/cluster: w1", "env: prod", "value: REDACTED", "server: https://w1.example:6443"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run does not show %q:\n%s", want, out)
		}
	}
}

// A dry run refuses what Loom would refuse, as add does.
func TestClusterAddDryRunRefuses(t *testing.T) {
	path := tokenKubeconfig(t, "user: {token: w1-token}", "user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, interactiveMode: Never}}")
	_, _, err := executeSplit(t, "", "cluster", "add", "w1", "--from-kubeconfig", path, "--dry-run")
	if err == nil || !strings.Contains(err.Error(), `user "w1-admin" runs exec credential plugin "aws"; start Loom with --allow-kubeconfig-exec`) {
		t.Errorf("error = %v, want Loom's refusal of the exec plugin", err)
	}
}

// Add needs the file to register: --kubeconfig names the management
// cluster, as in every other command, so it is not taken for it.
func TestClusterAddNeedsFromKubeconfig(t *testing.T) {
	_, _, err := executeSplit(t, "", "cluster", "add", "w1", "--kubeconfig", "w1.kubeconfig")
	if err == nil || !strings.Contains(err.Error(), `required flag(s) "from-kubeconfig" not set`) {
		t.Errorf("error = %v, want the missing --from-kubeconfig", err)
	}
}

func TestClusterTable(t *testing.T) {
	var b strings.Builder
	rows := []clusteradmin.Row{
		{Name: "w1", Source: cluster.SourceLoom, Secret: "loom-system/w1", Labels: map[string]string{cluster.LabelCluster: "w1", "region": "eu", "env": "prod"},
			Reachable: true, Version: "v1.36.3"},
		{Name: "c1", Source: cluster.SourceClusterAPI, Secret: "loom-system/c1-kubeconfig", Labels: map[string]string{cluster.LabelClusterAPIName: "c1"},
			Error: "dial tcp 127.0.0.1:1: connect: connection refused"},
	}
	if err := printClusterTable(&b, rows, "loom-system"); err != nil {
		t.Fatal(err)
	}
	want := `NAME   SOURCE        SECRET                      REACHABLE   VERSION   LABELS               ERROR
w1     loom          loom-system/w1              yes         v1.36.3   env=prod,region=eu
c1     cluster-api   loom-system/c1-kubeconfig   no          none      none                 dial tcp 127.0.0.1:1: connect: connection refused
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	b.Reset()
	if err := printClusterTable(&b, nil, "loom"); err != nil || b.String() != "No cluster is registered in namespace loom.\n" {
		t.Errorf("empty table = %q, %v", b.String(), err)
	}
}
