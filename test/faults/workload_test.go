//go:build e2e

package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// spreadGVR is the parent kind of the workload cluster's fault test,
// installed by Loom (--install-crds) and deleted when the test ends.
var (
	spreadGVR = schema.GroupVersionResource{Group: "faults.loom.dev", Version: "v1", Resource: "spreads"}
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// spreadParents is how many parents TestWorkloadAPIServerStopped places
// children with in both clusters.
const spreadParents = 5

// spreadSet writes a set that may use the workload cluster w1: each
// Spread renders ConfigMap NAME-local in the cluster Loom runs in and
// NAME-remote in w1, both holding spec.message. It returns the templates
// folder.
func spreadSet(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	testutil.WriteFiles(t, filepath.Join(root, "spread"), map[string]string{
		"loom.yaml": `parent:
  apiVersion: faults.loom.dev/v1
  kind: Spread
schema:
  spec:
    message: string
clusters:
  names: [w1]
`,
		"configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-local
data:
  message: {{ .Spec.message | quote }}
{{- range .Clusters }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Name }}-remote
  annotations:
    loom.dev/cluster: {{ .Name }}
data:
  message: {{ $.Spec.message | quote }}
{{- end }}
`,
	})
	return root
}

// childState is what a child's identity and last write are: a child
// deleted and made again has another UID, one written again another
// resourceVersion.
type childState struct{ uid, rv string }

// loomChildren lists the ConfigMaps with Loom's labels in ns, read with
// dyn, by name.
func loomChildren(ctx context.Context, dyn dynamic.Interface, ns string) (map[string]childState, error) {
	list, err := dyn.Resource(configMapGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=loom"})
	if err != nil {
		return nil, err
	}
	out := map[string]childState{}
	for _, o := range list.Items {
		out[o.GetName()] = childState{string(o.GetUID()), o.GetResourceVersion()}
	}
	return out, nil
}

// waitSpreadCondition waits until every Spread in ns named in names has
// condition Ready with status and, if reason is not "", that reason and a
// message holding every one of texts.
func waitSpreadCondition(t *testing.T, ns string, names []string, timeout time.Duration, status, reason string, texts ...string) {
	t.Helper()
	e := env.From(t)
	testutil.Eventually(t, timeout, fmt.Sprintf("%d Spreads Ready=%s %s", len(names), status, reason), func(ctx context.Context) error {
		for _, n := range names {
			p, err := e.Get(ctx, spreadGVR, ns, n)
			if err != nil {
				return err
			}
			st, r, msg := testutil.Condition(p, "Ready")
			if st != status || (reason != "" && r != reason) {
				return fmt.Errorf("%s: Ready=%s reason %s: %.300q", n, st, r, msg)
			}
			for _, text := range texts {
				if !strings.Contains(msg, text) {
					return fmt.Errorf("%s: Ready=%s reason %s: %.300q, want it to say %q", n, st, r, msg, text)
				}
			}
			if og, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration"); og != p.GetGeneration() {
				return fmt.Errorf("%s: observedGeneration %d of %d", n, og, p.GetGeneration())
			}
		}
		return nil
	})
}

// The workload cluster's API server is stopped for real (workload.sh stop
// kube-apiserver) under parents with children in both clusters: each
// parent goes Ready=False, reason ClusterUnreachable, naming the cluster;
// its local children stay, unwritten, and an edit made meanwhile reaches
// the local child; nothing is deleted in either cluster. When the API
// server is started again, every parent is Ready again with no duplicate
// child, no remote child replaced, and only the edited parent's remote
// child written. The workload cluster is started again when the test
// ends, pass or fail.
func TestWorkloadAPIServerStopped(t *testing.T) {
	e := env.From(t)
	w := e.NeedWorkload(t)
	ctx := context.Background()
	t.Cleanup(func() {
		if err := e.Dyn.Resource(crdGVR).Delete(context.Background(), "spreads.faults.loom.dev", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete the Spread CRD: %v", err)
		}
	})
	ns, loomNS := e.NewNamespace(t), e.NewNamespace(t)
	w.CreateNamespace(t, ns)
	kc, err := os.ReadFile(w.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	reg := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: loomNS, Labels: map[string]string{"loom.dev/cluster": "w1"}},
		Data: map[string][]byte{"kubeconfig": kc}}
	if _, err := e.Kube.CoreV1().Secrets(loomNS).Create(ctx, reg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The parents hold loom.dev/remote-children; once Loom is stopped
	// (its cleanup runs first), they are let go so that the namespace goes.
	t.Cleanup(func() {
		list, err := e.Dyn.Resource(spreadGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, p := range list.Items {
			_, _ = e.Dyn.Resource(spreadGVR).Namespace(ns).Patch(context.Background(), p.GetName(), types.MergePatchType,
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
	tracker := trackChildren(t, ns, configMapGVR)
	loom := startLoom(t, spreadSet(t), ns, "--install-crds", "--loom-namespace", loomNS)
	testutil.Eventually(t, time.Minute, "the Spread CRD is served", func(ctx context.Context) error {
		_, err := e.Dyn.Resource(spreadGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err
	})
	var names []string
	for i := range spreadParents {
		name := fmt.Sprintf("spread-%d", i)
		names = append(names, name)
		p := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "faults.loom.dev/v1", "kind": "Spread", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"message": "hello"},
		}}
		if _, err := e.Dyn.Resource(spreadGVR).Namespace(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitSpreadCondition(t, ns, names, 2*time.Minute, "True", "")
	local, err := loomChildren(ctx, e.Dyn, ns)
	if err != nil {
		t.Fatal(err)
	}
	remote, err := loomChildren(ctx, w.Dyn, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(local) != spreadParents || len(remote) != spreadParents {
		t.Fatalf("%d local and %d remote children, want %d of each: %v %v", len(local), len(remote), spreadParents, local, remote)
	}

	// The workload cluster's API server stops; it is started again when
	// the test ends if the test has not done so.
	stopped := true
	t.Cleanup(func() {
		if stopped {
			e.WorkloadScript(t, "start", "kube-apiserver")
		}
	})
	down := time.Now()
	e.WorkloadScript(t, "stop", "kube-apiserver") // refuses connections at once, exits within 10 s
	waitSpreadCondition(t, ns, names, 2*time.Minute, "False", "ClusterUnreachable", "w1")
	t.Logf("every parent ClusterUnreachable %s after the stop began", time.Since(down).Round(100*time.Millisecond))
	waitEventFor(t, ns, names[1], "ClusterUnreachable", "w1")

	// An edit while the cluster is down reaches the local child.
	edited := names[0]
	if _, err := e.Dyn.Resource(spreadGVR).Namespace(ns).Patch(ctx, edited, types.MergePatchType,
		[]byte(`{"spec":{"message":"edited"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the edit reaches "+edited+"-local while w1 is down", func(ctx context.Context) error {
		cm, err := e.Get(ctx, configMapGVR, ns, edited+"-local")
		if err != nil {
			return err
		}
		if msg, _, _ := unstructured.NestedString(cm.Object, "data", "message"); msg != "edited" {
			return fmt.Errorf("data.message = %q", msg)
		}
		return nil
	})
	waitSpreadCondition(t, ns, names, time.Minute, "False", "ClusterUnreachable", "w1")
	during, err := loomChildren(ctx, e.Dyn, ns)
	if err != nil {
		t.Fatal(err)
	}
	compareChildren(t, "local, while w1 is down", local, during, edited+"-local")

	stopped = false
	e.WorkloadScript(t, "start", "kube-apiserver")
	up := time.Now()
	waitSpreadCondition(t, ns, names, 3*time.Minute, "True", "")
	t.Logf("every parent Ready %s after the API server started again", time.Since(up).Round(100*time.Millisecond))
	testutil.Eventually(t, time.Minute, "the edit reaches "+edited+"-remote", func(ctx context.Context) error {
		cm, err := w.Dyn.Resource(configMapGVR).Namespace(ns).Get(ctx, edited+"-remote", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if msg, _, _ := unstructured.NestedString(cm.Object, "data", "message"); msg != "edited" {
			return fmt.Errorf("data.message = %q", msg)
		}
		return nil
	})
	loom.mustRun(t)
	// A reconcile that would write or make a child again comes within a
	// few seconds of Ready; wait that long before the last look.
	time.Sleep(5 * time.Second)
	afterLocal, err := loomChildren(ctx, e.Dyn, ns)
	if err != nil {
		t.Fatal(err)
	}
	afterRemote, err := loomChildren(ctx, w.Dyn, ns)
	if err != nil {
		t.Fatal(err)
	}
	compareChildren(t, "local, after w1 came back", during, afterLocal)
	compareChildren(t, "in w1, after it came back", remote, afterRemote, edited+"-remote")
	tracker.check(t)
}

// compareChildren fails the test unless after holds the same children as
// before, none made again (UID) and none written (resourceVersion) but
// those in written, which must have been.
func compareChildren(t *testing.T, what string, before, after map[string]childState, written ...string) {
	t.Helper()
	var bad []string
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			bad = append(bad, name+" is gone")
		case a.uid != b.uid:
			bad = append(bad, fmt.Sprintf("%s was made again (UID %s, was %s)", name, a.uid, b.uid))
		case containsString(written, name) && a.rv == b.rv:
			bad = append(bad, name+" was not written, want the edit")
		case !containsString(written, name) && a.rv != b.rv:
			bad = append(bad, fmt.Sprintf("%s was written (resourceVersion %s, was %s)", name, a.rv, b.rv))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			bad = append(bad, name+" is new (a duplicate?)")
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("children %s: %s", what, strings.Join(bad, "; "))
	}
}

// waitEventFor waits for a Warning Event of reason on the object name in
// ns whose message says text.
func waitEventFor(t *testing.T, ns, name, reason, text string) {
	t.Helper()
	e := env.From(t)
	testutil.Eventually(t, 30*time.Second, "a Warning "+reason+" Event on "+name, func(ctx context.Context) error {
		evs, err := e.Events(ctx, ns, name)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.Type == corev1.EventTypeWarning && ev.Reason == reason && strings.Contains(ev.Message, text) {
				return nil
			}
		}
		return fmt.Errorf("%d Events, none Warning %s saying %q", len(evs), reason, text)
	})
}
