//go:build e2e

package e2e

// loom diff with children in a registered workload cluster (issue 34):
// each remote child is diffed against that cluster, pruned children are
// found there, and a cluster that does not answer fails the diff in time.

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/test/env"
)

// A parent with a ConfigMap in the cluster Loom runs in and one in the
// workload cluster w1: with nothing to change, loom diff exits 0 and
// prints no diff; after a spec edit (Loom stopped, so that it is not
// applied) it shows the change in both clusters, the remote one headed
// live@w1, and writes nothing there; a remote child that stops rendering
// is shown as pruned in w1.
func TestDiffWorkloadCluster(t *testing.T) {
	w := workload(t)
	e := env.From(t)
	t.Parallel()
	ns, loomNS := e.NewNamespace(t), e.NewNamespace(t)
	w.namespace(t, ns)
	register(t, loomNS, "w1", w.kubeconfig)
	s := fanoutSet(t, "DiffFanout")
	l := startFanoutLoom(t, s, ns, loomNS)
	s.create(t, ns, "web", "message: hello\n")
	waitConditionGVR(t, s.gvr, ns, "web", "Ready", "True")
	waitData(t, w.dyn, ns, "web-remote", "hello")

	diff := func(args ...string) (string, int) {
		return loomDiff(t, append([]string{"-t", s.dir, "-n", ns, "--loom-namespace", loomNS}, args...)...)
	}
	out, code := diff()
	if code != 0 || strings.Contains(out, "---") ||
		!strings.Contains(out, fmt.Sprintf("DiffFanout %s/web: 0 to create, 0 to change, 2 unchanged, 0 to prune", ns)) {
		t.Fatalf("nothing to change: exit %d (want 0, and no diff)\n%s", code, out)
	}

	l.stop(t)
	patch := func(spec string) {
		t.Helper()
		_, err := e.Dyn.Resource(s.gvr).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType,
			[]byte(`{"spec":`+spec+`}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	patch(`{"message":"bye"}`)
	out, code = diff()
	for _, want := range []string{
		fmt.Sprintf("--- live@w1/ConfigMap/%s/web-remote", ns),
		fmt.Sprintf("+++ rendered@w1/ConfigMap/%s/web-remote", ns),
		fmt.Sprintf("+++ rendered/ConfigMap/%s/web-local", ns),
		"+  message: bye",
		fmt.Sprintf("DiffFanout %s/web: 0 to create, 2 to change, 0 unchanged, 0 to prune", ns),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff output lacks %q", want)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if t.Failed() {
		t.Fatalf("output:\n%s", out)
	}
	waitData(t, w.dyn, ns, "web-remote", "hello") // the dry run wrote nothing there

	patch(`{"remote":"off"}`)
	out, code = diff()
	if code != 1 || !strings.Contains(out, fmt.Sprintf("--- live@w1/ConfigMap/%s/web-remote", ns)) ||
		!strings.Contains(out, fmt.Sprintf("DiffFanout %s/web: 0 to create, 1 to change, 0 unchanged, 1 to prune", ns)) {
		t.Fatalf("a remote child that no longer renders: exit %d (want 1, pruned in w1)\n%s", code, out)
	}
}

// A registered cluster whose API server accepts connections and never
// answers: loom diff fails within --cluster-timeout, exit 2, naming the
// cluster, instead of hanging.
func TestDiffWorkloadClusterDoesNotAnswer(t *testing.T) {
	w := workload(t)
	e := env.From(t)
	t.Parallel()
	ns, loomNS, deadNS := e.NewNamespace(t), e.NewNamespace(t), e.NewNamespace(t)
	w.namespace(t, ns)
	register(t, loomNS, "w1", w.kubeconfig)
	s := fanoutSet(t, "DiffHung")
	startFanoutLoom(t, s, ns, loomNS)
	s.create(t, ns, "web", "message: hello\n")
	waitConditionGVR(t, s.gvr, ns, "web", "Ready", "True")

	// The same name, w1, registered in another namespace for a server
	// that never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn // accepted, never read nor written
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	register(t, deadNS, "w1", []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: hung, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: nothing}}]
contexts: [{name: hung, context: {cluster: hung, user: u}}]
current-context: hung
`, ln.Addr())))

	start := time.Now()
	out, code := loomDiff(t, "-t", s.dir, "-n", ns, "--loom-namespace", deadNS, "--cluster-timeout", "2s")
	took := time.Since(start)
	if code != 2 || !strings.Contains(out, "cluster w1 did not answer within 2s") {
		t.Fatalf("a cluster that does not answer: exit %d (want 2, naming the cluster)\n%s", code, out)
	}
	t.Logf("loom diff failed on the cluster that does not answer after %s (--cluster-timeout 2s):\n%s", took.Round(time.Millisecond), out)
	if took > 20*time.Second {
		t.Errorf("diff took %s against a cluster that does not answer, with --cluster-timeout 2s", took)
	}
}
