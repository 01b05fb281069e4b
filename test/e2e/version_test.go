//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

// loomVersion runs bin/loom version with args, and returns its stdout,
// its stderr and its exit code.
func loomVersion(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	e := env.From(t)
	cmd := exec.Command(e.Binary, append([]string{"version"}, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	}
	t.Fatalf("loom version: %v\n%s", err, errOut.String())
	return "", "", 0
}

// loom version finds the Deployments Loom's chart labels, in the real API
// server, and a cluster that does not answer is exit 1 with the client's
// version still printed.
func TestVersionReportsInstallations(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	// replicas: 0, so that no pod is made: the test needs only the object.
	for _, manifest := range []string{`apiVersion: apps/v1
kind: Deployment
metadata:
  name: loom
  labels: {app.kubernetes.io/name: loom, app.kubernetes.io/version: 1.2.3}
spec:
  replicas: 0
  selector: {matchLabels: {app.kubernetes.io/name: loom}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: loom, app.kubernetes.io/version: 1.2.3}
    spec:
      containers:
      - name: loom
        image: registry.invalid/loom:1.2.3
`, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app.kubernetes.io/name: web}
spec:
  replicas: 0
  selector: {matchLabels: {app.kubernetes.io/name: web}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: web}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1
`} {
		createObject(t, deployments, ns, manifest)
	}
	unreachable := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	type server struct {
		Namespace, Name, Version, Image string
		ReadyReplicas, Replicas         int32
	}
	tests := []struct {
		name        string
		args        []string
		wantServers []server // nil: servers must be absent
		wantCode    int
		wantErr     string
	}{
		{name: "one namespace", args: []string{"--kubeconfig", e.Kubeconfig, "-n", ns},
			wantServers: []server{{Namespace: ns, Name: "loom", Version: "1.2.3", Image: "registry.invalid/loom:1.2.3"}}},
		{name: "unreachable", args: []string{"--kubeconfig", unreachable}, wantCode: 1, wantErr: "connection refused"},
		{name: "--client with an unreachable cluster", args: []string{"--kubeconfig", unreachable, "--client"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := loomVersion(t, append(tt.args, "-o", "json")...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d, want %d with %q on stderr:\n%s", code, tt.wantCode, tt.wantErr, errOut)
			}
			var got struct {
				Client  struct{ Version, GoVersion string }
				Servers []server
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if got.Client.Version == "" || got.Client.GoVersion == "" {
				t.Errorf("no client version:\n%s", out)
			}
			if diff := cmp.Diff(tt.wantServers, got.Servers); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
		})
	}
}
