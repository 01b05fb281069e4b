package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-operator/loom/internal/testutil"
)

// runLoom runs the loom command line in process, as main does, and
// returns its stdout, its stderr and the exit status main would end with.
func runLoom(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := exitCode(root.ExecuteC())
	return out.String(), errOut.String(), code
}

// Every exit status the commands' help and docs/reference/cli.md document, except
// those that need a cluster's answer: loom diff's 0 and 1 (test/e2e
// diff_test.go), loom crd --check's 0 and 1 (crdcheck_test.go), loom
// rollout status's 0, 2 and 3 (rollout_test.go), loom version's 1 for a
// cluster that refuses or does not answer (version_test.go), and loom
// run's 0 after SIGTERM (test/e2e steady_test.go).
func TestExitCodes(t *testing.T) {
	set := filepath.Join(repoRoot, "templates", "myresource")
	parent := filepath.Join(repoRoot, "examples", "myresource.yaml")
	noKubeconfig := filepath.Join(t.TempDir(), "no-such-kubeconfig")

	failing := copySet(t)
	golden := filepath.Join(failing, "tests", "minimal.golden.yaml")
	text, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(golden, append(text, "# not rendered\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(t.TempDir(), "chart")
	testutil.WriteFiles(t, chart, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"values.yaml":       "name: x\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n",
	})
	made := filepath.Join(t.TempDir(), "made")
	if _, errOut, code := runLoom(t, "", "init", made, "--chart", chart, "--kind", "App"); code != 0 {
		t.Fatalf("loom init: exit %d\n%s", code, errOut)
	}

	tests := []struct {
		name string
		args []string
		want int
	}{
		{name: "no command", args: nil, want: 0},
		{name: "unknown command", args: []string{"bogus"}, want: 1},
		{name: "unknown flag", args: []string{"--bogus"}, want: 1},

		{name: "render", args: []string{"render", "-t", set, "-f", parent}, want: 0},
		{name: "render: missing -t", args: []string{"render", "-f", parent}, want: 1},
		{name: "render: an argument", args: []string{"render", "-t", set, "-f", parent, "extra"}, want: 1},
		{name: "render: no such file", args: []string{"render", "-t", set, "-f", "no-such.yaml"}, want: 1},

		{name: "test: passing", args: []string{"test", set}, want: 0},
		{name: "test: a case fails", args: []string{"test", failing}, want: 1},
		{name: "test: no path", args: []string{"test"}, want: 1},
		{name: "test: no such folder", args: []string{"test", "no-such-folder"}, want: 1},

		{name: "diff: missing -t", args: []string{"diff"}, want: 2},
		{name: "diff: unknown flag", args: []string{"diff", "-t", set, "--bogus"}, want: 2},
		{name: "diff: no such set", args: []string{"diff", "-t", "no-such-set", "--kubeconfig", noKubeconfig}, want: 2},
		{name: "diff: no cluster", args: []string{"diff", "-t", set, "--kubeconfig", noKubeconfig}, want: 2},

		{name: "crd", args: []string{"crd", "-t", set}, want: 0},
		{name: "crd: missing -t", args: []string{"crd"}, want: 2},
		{name: "crd: no such set", args: []string{"crd", "-t", "no-such-set"}, want: 2},
		{name: "crd --check: no such set", args: []string{"crd", "-t", "no-such-set", "--check"}, want: 2},
		{name: "crd --check: no cluster", args: []string{"crd", "-t", set, "--check", "--kubeconfig", noKubeconfig}, want: 2},

		{name: "init: DIR holds a loom.yaml", args: []string{"init", made, "--chart", chart, "--kind", "App"}, want: 1},
		{name: "init: no DIR", args: []string{"init", "--chart", chart, "--kind", "App"}, want: 1},

		{name: "rollout: no subcommand", args: []string{"rollout"}, want: 0},
		{name: "rollout status: no SET", args: []string{"rollout", "status"}, want: 1},
		{name: "rollout status: no cluster", args: []string{"rollout", "status", "x", "--kubeconfig", noKubeconfig}, want: 1},
		{name: "rollout pause: no cluster", args: []string{"rollout", "pause", "x", "--kubeconfig", noKubeconfig}, want: 1},

		{name: "run: an argument", args: []string{"run", "extra"}, want: 1},
		{name: "run: bad --workers", args: []string{"run", "--workers", "many"}, want: 1},
		{name: "run: no cluster", args: []string{"run", "--kubeconfig", noKubeconfig}, want: 1},

		{name: "version --client", args: []string{"version", "--client", "--kubeconfig", noKubeconfig}, want: 0},
		{name: "version: no cluster", args: []string{"version", "--kubeconfig", noKubeconfig}, want: 1},
		{name: "version: unknown -o", args: []string{"version", "--client", "-o", "table"}, want: 1},

		{name: "cluster: no subcommand", args: []string{"cluster"}, want: 0},
		{name: "cluster add: no NAME", args: []string{"cluster", "add", "--from-kubeconfig", noKubeconfig}, want: 1},
		{name: "cluster add: no --from-kubeconfig", args: []string{"cluster", "add", "w1"}, want: 1},
		{name: "cluster add: no such file", args: []string{"cluster", "add", "w1", "--from-kubeconfig", noKubeconfig, "--dry-run"}, want: 1},
		{name: "cluster list: no cluster", args: []string{"cluster", "list", "--kubeconfig", noKubeconfig}, want: 1},
		{name: "cluster list: unknown -o", args: []string{"cluster", "list", "-o", "wide"}, want: 1},
		{name: "cluster remove: no NAME", args: []string{"cluster", "remove"}, want: 1},
		{name: "cluster remove: no cluster", args: []string{"cluster", "remove", "w1", "--kubeconfig", noKubeconfig}, want: 1},

		{name: "completion bash", args: []string{"completion", "bash"}, want: 0},
		{name: "completion: unknown shell", args: []string{"completion", "tcsh"}, want: 1},
		{name: "completion: no shell", args: []string{"completion"}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runLoom(t, "", tt.args...)
			if code != tt.want {
				t.Errorf("loom %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.want, out, errOut)
			}
		})
	}
}
