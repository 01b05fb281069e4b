package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Out of a cluster, loom run --leader-elect or --sharded with no Lease
// namespace fails at start and names the flag to set, instead of waiting
// forever for a Lease in a namespace that may not exist.
func TestRunOutOfAClusterNeedsALeaseNamespace(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	serviceAccountNamespaceFile = filepath.Join(t.TempDir(), "no-such-file")
	t.Cleanup(func() { serviceAccountNamespaceFile = defaultServiceAccountNamespaceFile })
	kubeconfig := filepath.Join(t.TempDir(), "no-kubeconfig")
	tests := []struct {
		name string
		args []string
		flag string
	}{
		{"leader election", []string{"--leader-elect"}, "--leader-election-namespace"},
		{"sharding", []string{"--sharded"}, "--shard-namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "-t", copySet(t), "--kubeconfig", kubeconfig, "--metrics-bind-address", ""}, tt.args...)
			_, err := execute(t, "", args...)
			if err == nil || !strings.Contains(err.Error(), "set "+tt.flag) || !strings.Contains(err.Error(), "not running in a pod") {
				t.Errorf("loom run %s = %v, want an error that says it is not running in a pod and to set %s", strings.Join(tt.args, " "), err, tt.flag)
			}
		})
	}
}

func TestLeaseNamespace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "namespace")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		flag, env  string
		file       string
		want, fail string // fail: a text the error holds
	}{
		{"the flag wins", "set", "from-env", file, "set", ""},
		{"$POD_NAMESPACE", "", "from-env", file, "from-env", ""},
		{"the service account's namespace file", "", "", file, "from-file", ""},
		{"out of a cluster", "", "", filepath.Join(dir, "absent"), "", "set --leader-election-namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tt.env)
			serviceAccountNamespaceFile = tt.file
			t.Cleanup(func() { serviceAccountNamespaceFile = defaultServiceAccountNamespaceFile })
			got, err := leaseNamespace(tt.flag, "--leader-election-namespace")
			if tt.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tt.fail) {
					t.Errorf("leaseNamespace = %q, %v; want an error with %q", got, err, tt.fail)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("leaseNamespace = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// loom run's --loom-namespace defaults to the pod's namespace, and out of
// a pod to loom-system, the default of loom render's flag of that name.
func TestLoomNamespace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "namespace")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, flag, env, file, want string
	}{
		{"the flag wins", "set", "from-env", file, "set"},
		{"$POD_NAMESPACE", "", "from-env", file, "from-env"},
		{"the service account's namespace file", "", "", file, "from-file"},
		{"out of a cluster", "", "", filepath.Join(dir, "absent"), "loom-system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tt.env)
			serviceAccountNamespaceFile = tt.file
			t.Cleanup(func() { serviceAccountNamespaceFile = defaultServiceAccountNamespaceFile })
			if got := loomNamespace(tt.flag); got != tt.want {
				t.Errorf("loomNamespace(%q) = %q, want %q", tt.flag, got, tt.want)
			}
		})
	}
}
