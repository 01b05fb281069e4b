//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/test/env"
)

// loomCluster runs bin/loom cluster with args against the management
// cluster's namespace ns, and returns its stdout, its stderr and its exit
// code.
func loomCluster(t *testing.T, ns string, args ...string) (string, string, int) {
	t.Helper()
	e := env.From(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Binary, append(append([]string{"cluster"}, args...), "--kubeconfig", e.Kubeconfig, "-n", ns)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee) && ctx.Err() == nil:
		return out.String(), errOut.String(), ee.ExitCode()
	}
	t.Fatalf("loom cluster %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	return "", "", 0
}

// kubeconfigAt writes a copy of the workload cluster's kubeconfig that
// points at server instead.
func kubeconfigAt(t *testing.T, w *env.Cluster, server string) string {
	t.Helper()
	b, err := os.ReadFile(w.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), w.Config.Host) {
		t.Fatalf("the workload kubeconfig does not name %s", w.Config.Host)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), w.Config.Host, server)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// hungServer is a TCP server that accepts connections and never answers:
// a cluster that hangs. It stops when the test ends.
func hungServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "https://" + l.Addr().String()
}

// loom cluster add registers the workload cluster in the management
// cluster as Loom reads a registration, idempotently; list shows it
// reachable with the workload API server's version, and a cluster that
// refuses connections or never answers unreachable, within --timeout;
// remove deletes a Loom registration and refuses Cluster API's.
func TestClusterCLI(t *testing.T) {
	e := env.From(t)
	w := e.NeedWorkload(t)
	t.Parallel()
	ctx := context.Background()
	ns := e.NewNamespace(t)
	secrets := e.Kube.CoreV1().Secrets(ns)

	// 1. add, and add again: the Secret Loom reads, written once.
	for _, want := range []string{"registered", "unchanged"} {
		out, stderr, code := loomCluster(t, ns, "add", "w1", "--from-kubeconfig", w.Kubeconfig, "--label", "env=e2e")
		if code != 0 || out != "cluster w1 "+want+" (Secret "+ns+"/w1)\n" {
			t.Fatalf("loom cluster add w1: exit %d, %q, want %s\n%s", code, out, want, stderr)
		}
	}
	s, err := secrets.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the registration Secret: %v", err)
	}
	if diff := cmp.Diff(map[string]string{cluster.LabelCluster: "w1", "env": "e2e"}, s.Labels); diff != "" {
		t.Errorf("the Secret's labels (-want +got):\n%s", diff)
	}
	reg, ok, err := cluster.FromSecret(s, ns)
	if err != nil || !ok {
		t.Fatalf("FromSecret(the Secret add wrote) = %v, %v", ok, err)
	}
	rc, err := cluster.RESTConfig(reg, cluster.Options{})
	if err != nil {
		t.Fatalf("RESTConfig(the Secret add wrote): %v", err)
	}
	if rc.Host != w.Config.Host {
		t.Errorf("the registration reaches %s, want the workload cluster's %s", rc.Host, w.Config.Host)
	}

	// 2. Two clusters that do not answer: one refuses, one hangs.
	for name, server := range map[string]string{"down": "https://127.0.0.1:1", "hung": hungServer(t)} {
		if _, stderr, code := loomCluster(t, ns, "add", name, "--from-kubeconfig", kubeconfigAt(t, w, server)); code != 0 {
			t.Fatalf("loom cluster add %s: exit %d\n%s", name, code, stderr)
		}
	}
	// A Cluster API registration of the workload cluster, as Cluster API writes it.
	kc, err := os.ReadFile(w.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	_, err = secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "c1-kubeconfig", Labels: map[string]string{cluster.LabelClusterAPIName: "c1"}},
		Type:       cluster.SecretTypeClusterAPI, Data: map[string][]byte{cluster.KeyClusterAPIKubeconfig: kc},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// 3. list: reachable with the version, or not with the reason, each
	// within --timeout.
	version, err := w.Kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 3 * time.Second
	start := time.Now()
	out, stderr, code := loomCluster(t, ns, "list", "--timeout", timeout.String(), "-o", "json")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("loom cluster list: exit %d\n%s", code, stderr)
	}
	var list struct {
		Clusters []struct {
			Name, Source, Secret, Version, Error string
			Reachable                            bool
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("loom cluster list -o json: %v\n%s", err, out)
	}
	type row struct{ Name, Source, Version, Error string }
	var got []row
	for _, c := range list.Clusters {
		r := row{Name: c.Name, Source: c.Source, Version: c.Version}
		switch {
		case c.Reachable && c.Error != "":
			r.Error = "reachable with an error: " + c.Error
		case !c.Reachable && strings.Contains(c.Error, "connection refused"):
			r.Error = "connection refused"
		case !c.Reachable && strings.Contains(c.Error, "no answer within "+timeout.String()):
			r.Error = "timeout"
		case !c.Reachable:
			r.Error = c.Error
		}
		got = append(got, r)
	}
	want := []row{
		{Name: "c1", Source: "cluster-api", Version: version.GitVersion},
		{Name: "down", Source: "loom", Error: "connection refused"},
		{Name: "hung", Source: "loom", Error: "timeout"},
		{Name: "w1", Source: "loom", Version: version.GitVersion},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loom cluster list (-want +got):\n%s\n%s", diff, out)
	}
	// Without the deadline the hung cluster would hold list until this
	// test's two minutes end; 5 times the deadline leaves room for
	// starting bin/loom and listing on a loaded machine.
	if took > 5*timeout {
		t.Errorf("loom cluster list took %s with --timeout %s", took, timeout)
	}

	// 4. add refuses a second registration of a name, and a Secret that is
	// not the cluster's.
	if _, stderr, code := loomCluster(t, ns, "add", "c1", "--from-kubeconfig", w.Kubeconfig); code != 1 ||
		!strings.Contains(stderr, "already registered by Cluster API's Secret "+ns+"/c1-kubeconfig") {
		t.Errorf("loom cluster add c1 (Cluster API's): exit %d, want 1 saying it is registered\n%s", code, stderr)
	}
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app"}, StringData: map[string]string{"password": "x"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := loomCluster(t, ns, "add", "app", "--from-kubeconfig", w.Kubeconfig); code != 1 ||
		!strings.Contains(stderr, "does not take over a Secret by its name") {
		t.Errorf("loom cluster add app (another Secret's name): exit %d, want 1\n%s", code, stderr)
	}

	// 5. remove: Loom's registrations go, Cluster API's stays.
	for _, name := range []string{"w1", "down", "hung"} {
		out, stderr, code := loomCluster(t, ns, "remove", name)
		if code != 0 || !strings.Contains(out, "cluster "+name+" removed") {
			t.Fatalf("loom cluster remove %s: exit %d, %q\n%s", name, code, out, stderr)
		}
		if _, err := secrets.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Secret %s after loom cluster remove: %v, want NotFound", name, err)
		}
	}
	if _, stderr, code := loomCluster(t, ns, "remove", "w1"); code != 1 || !strings.Contains(stderr, "no registration of cluster w1") {
		t.Errorf("loom cluster remove w1 again: exit %d, want 1\n%s", code, stderr)
	}
	if _, stderr, code := loomCluster(t, ns, "remove", "c1"); code != 1 || !strings.Contains(stderr, "Cluster API owns") {
		t.Errorf("loom cluster remove c1: exit %d, want 1 refusing Cluster API's\n%s", code, stderr)
	}
	if _, err := secrets.Get(ctx, "c1-kubeconfig", metav1.GetOptions{}); err != nil {
		t.Errorf("Cluster API's Secret after loom cluster remove c1: %v", err)
	}
	if app, err := secrets.Get(ctx, "app", metav1.GetOptions{}); err != nil || string(app.Data["password"]) != "x" {
		t.Errorf("the Secret app after add refused it: %v, %v", app, err)
	}
}

// The harness's namespaces in the workload cluster, which has no namespace
// controller, go with what is in them when their test ends.
func TestWorkloadNamespaceCleanup(t *testing.T) {
	e := env.From(t)
	w := e.NeedWorkload(t)
	t.Parallel()
	ctx := context.Background()
	var ns string
	t.Run("uses", func(t *testing.T) {
		ns = w.NewNamespace(t, "e2e-")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "left"}, Data: map[string]string{"a": "b"}}
		if _, err := w.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := w.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s in the workload cluster after its test: %v, want NotFound", ns, err)
	}
	if _, err := w.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "left", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap %s/left in the workload cluster after its test: %v, want NotFound", ns, err)
	}
}
