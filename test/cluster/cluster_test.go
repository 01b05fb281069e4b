// Package cluster tests the error paths of hack/cluster/cluster.sh that a
// working cluster never takes: a port already in use, and a process that
// exits right after it starts. Each test runs a copy of the script in a
// folder of its own, with fake binaries and ports of its own, so it needs
// no cluster and never touches the real one. It also runs hack/e2e.sh
// with fake cluster scripts, to check which clusters it starts and stops.
package cluster

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sandbox is a copy of hack/cluster in a temporary repository root, with
// fake binaries in its bin/.
type sandbox struct {
	root  string
	ports map[string]int
	// env is more of the script's environment (CLUSTER_COMPONENTS, ...).
	env map[string]string
}

func newSandbox(t *testing.T, etcd string) *sandbox {
	t.Helper()
	s := &sandbox{root: t.TempDir(), ports: map[string]int{}, env: map[string]string{}}
	for _, f := range []string{"cluster.sh", "go.mod"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "hack", "cluster", f))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(s.root, "hack", "cluster", f), string(b))
	}
	// go.mod older than the binaries, so the script takes them as built.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(s.root, "hack", "cluster", "go.mod"), old, old); err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{
		"etcd":                    etcd,
		"kube-apiserver":          "#!/bin/sh\nexit 1\n",
		"kube-controller-manager": "#!/bin/sh\nexit 1\n",
		"kube-scheduler":          "#!/bin/sh\nexit 1\n",
		"kwok":                    "#!/bin/sh\necho 'kwok version v0.7.0'\n",
	}
	for name, script := range bins {
		write(t, filepath.Join(s.root, "bin", name), script)
	}
	for _, p := range []string{"CLUSTER_ETCD_PORT", "CLUSTER_ETCD_PEER_PORT", "CLUSTER_APISERVER_PORT"} {
		s.ports[p] = freePort(t)
	}
	return s
}

// up runs `cluster.sh up` and returns its exit code and output.
func (s *sandbox) up(t *testing.T) (int, string) {
	t.Helper()
	return s.run(t, "up")
}

// run runs cluster.sh with args and returns its exit code and output.
func (s *sandbox) run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(s.root, "hack", "cluster", "cluster.sh")}, args...)...)
	cmd.Env = append(os.Environ(), "CLUSTER_TIMEOUT=5")
	for k, v := range s.ports {
		cmd.Env = append(cmd.Env, k+"="+strconv.Itoa(v))
	}
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return 0, string(out)
}

// restart and compact refuse to act on a cluster that is not up, and
// restart names the components it knows.
func TestRestartAndCompactNeedARunningCluster(t *testing.T) {
	s := newSandbox(t, "#!/bin/sh\nexit 1\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"restart"}, "restart what? one of: etcd kube-apiserver kube-controller-manager kube-scheduler kwok"},
		{[]string{"restart", "kubelet"}, "restart what? one of: etcd kube-apiserver"},
		{[]string{"restart", "kube-apiserver"}, "the cluster is not up; run"},
		{[]string{"compact"}, "etcd is not running; run"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out := s.run(t, tc.args...)
			if code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want non-zero and %q in:\n%s", code, tc.want, out)
			}
			if strings.Contains(out, "starting") || strings.Contains(out, "stopped") {
				t.Errorf("it started or stopped something:\n%s", out)
			}
		})
	}
}

// CLUSTER_COMPONENTS picks the components, in start order whatever the
// order given; a name the script does not know, or a cluster without etcd
// or an API server, is refused before anything starts.
func TestClusterComponents(t *testing.T) {
	for _, tc := range []struct {
		name, components string
		args             []string
		want             string
	}{
		{"unknown name", "etcd kube-apiserver kubelet", []string{"up"}, "CLUSTER_COMPONENTS: unknown component 'kubelet'"},
		{"no API server", "etcd kwok", []string{"up"}, "CLUSTER_COMPONENTS must include kube-apiserver"},
		{"start order kept", "kube-apiserver etcd", []string{"restart", "kwok"}, "restart what? one of: etcd kube-apiserver\n"},
		{"status lists only the chosen", "etcd kube-apiserver", []string{"status"}, "etcd: not running\nkube-apiserver: not running\ncluster is not up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t, "#!/bin/sh\nexit 1\n")
			s.env["CLUSTER_COMPONENTS"] = tc.components
			code, out := s.run(t, tc.args...)
			if code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want non-zero and %q in:\n%s", code, tc.want, out)
			}
			if strings.Contains(out, "starting") {
				t.Errorf("it started something:\n%s", out)
			}
		})
	}
}

// CLUSTER_STATE moves the state folder: logs and pid files go there, and
// the default one is left alone.
func TestClusterState(t *testing.T) {
	s := newSandbox(t, "#!/bin/sh\necho 'fake etcd: gone' >&2\nexit 1\n")
	state := filepath.Join(s.root, ".cluster-other")
	s.env["CLUSTER_STATE"] = state
	code, out := s.up(t)
	if want := filepath.Join(state, "logs", "etcd.log"); code == 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, want non-zero and the log %s named in:\n%s", code, want, out)
	}
	if _, err := os.Stat(filepath.Join(s.root, ".cluster")); !os.IsNotExist(err) {
		t.Errorf("the default state folder was created (stat: %v)", err)
	}
}

func TestPortInUseIsAClearError(t *testing.T) {
	s := newSandbox(t, "#!/bin/sh\nexit 1\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	s.ports["CLUSTER_APISERVER_PORT"] = taken
	code, out := s.up(t)
	want := "port " + strconv.Itoa(taken) + " (for kube-apiserver) is already in use; free it or choose another with CLUSTER_APISERVER_PORT=PORT"
	if code == 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, want non-zero and %q in:\n%s", code, want, out)
	}
	if strings.Contains(out, "starting") {
		t.Errorf("it started something before checking the ports:\n%s", out)
	}
}

func TestProcessThatExitsEarlyShowsItsLogTail(t *testing.T) {
	s := newSandbox(t, "#!/bin/sh\necho 'fake etcd: --data-dir is not writable' >&2\nexit 1\n")
	code, out := s.up(t)
	for _, want := range []string{"ERROR: etcd exited right after start", "fake etcd: --data-dir is not writable", "stopping everything that was started"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if code == 0 || t.Failed() {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	pids, _ := filepath.Glob(filepath.Join(s.root, ".cluster", "pids", "*.pid"))
	if len(pids) != 0 {
		t.Errorf("pid files left behind: %v", pids)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
