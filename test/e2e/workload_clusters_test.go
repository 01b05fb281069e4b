//go:build e2e

package e2e

// Children placed in a registered workload cluster (issue 34): applied
// there without an ownerReference, updated, repaired and pruned there, and
// deleted there before their parent goes.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loom-operator/loom/test/env"
)

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// workloadCluster is the e2e workload cluster: its kubeconfig, as a
// registration Secret holds it, and a client of it.
type workloadCluster struct {
	kubeconfig []byte
	dyn        dynamic.Interface
	kube       kubernetes.Interface
}

// workload returns the e2e workload cluster (env.Env.Workload), failing
// the test when the suite has none: make test starts it.
func workload(t *testing.T) *workloadCluster {
	t.Helper()
	c := env.From(t).NeedWorkload(t)
	b, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatalf("read the workload cluster's kubeconfig: %v", err)
	}
	return &workloadCluster{kubeconfig: b, dyn: c.Dyn, kube: c.Kube}
}

// namespace creates the namespace ns in the workload cluster, and deletes
// it and its ConfigMaps when the test ends. The workload cluster runs no
// namespace controller, so the namespace's finalizer is cleared by hand.
func (w *workloadCluster) namespace(t *testing.T, ns string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := w.dyn.Resource(namespaceGVR).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s in the workload cluster: %v", ns, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = w.dyn.Resource(configMapGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err := w.dyn.Resource(namespaceGVR).Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s in the workload cluster: %v", ns, err)
			return
		}
		cur, err := w.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return
		}
		cur.Spec.Finalizers = nil
		if _, err := w.kube.CoreV1().Namespaces().Finalize(ctx, cur, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("finalize namespace %s in the workload cluster: %v", ns, err)
		}
	})
}

// register writes the Secret that registers a cluster named name with
// kubeconfig, in Loom's namespace loomNS.
func register(t *testing.T, loomNS, name string, kubeconfig []byte) {
	t.Helper()
	e := env.From(t)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: loomNS, Labels: map[string]string{"loom.dev/cluster": name}},
		Data: map[string][]byte{"kubeconfig": kubeconfig}}
	if _, err := e.Kube.CoreV1().Secrets(loomNS).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("register cluster %s: %v", name, err)
	}
}

// fanoutSet is a set for kind (installed by Loom; one per test, as the
// tests run in parallel and each deletes its CRD) that may use
// the cluster w1: a ConfigMap NAME-local in the cluster Loom runs in, and,
// unless spec.remote is "off", a ConfigMap NAME-remote in each cluster it
// may use, both holding spec.message.
func fanoutSet(t *testing.T, kind string) *installSet {
	t.Helper()
	s := newInstallSet(t, kind, `
schema:
  spec:
    message: string
    remote: string
clusters:
  names: [w1]
`, "fanout")
	s.write(t, "configmap.yaml", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-local
data:
  message: {{ .Spec.message | default "none" | quote }}
{{- if ne (.Spec.remote | default "on") "off" }}
{{- range .Clusters }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Name }}-remote
  annotations:
    loom.dev/cluster: {{ .Name }}
data:
  message: {{ $.Spec.message | default "none" | quote }}
{{- end }}
{{- end }}
`)
	return s
}

// startFanoutLoom starts a Loom on s's templates for the parents of ns,
// reading registrations in loomNS and installing s's CRD, and waits until
// the CRD is served; the parents' finalizers are stripped when the test
// ends, after Loom stopped (stripParentFinalizers).
func startFanoutLoom(t *testing.T, s *installSet, ns, loomNS string) *loom {
	t.Helper()
	stripParentFinalizers(t, s, ns)
	l := startLoom(t, s.root, ns, loomOptions{installCRDs: true, loomNamespace: loomNS})
	s.waitEstablished(t)
	return l
}

// stripParentFinalizers removes the finalizers of the set's parents in ns
// when the test ends, after Loom stopped: the namespace and the CRD can
// then go.
func stripParentFinalizers(t *testing.T, s *installSet, ns string) {
	e := env.From(t)
	t.Cleanup(func() {
		ctx := context.Background()
		list, err := e.Dyn.Resource(s.gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, p := range list.Items {
			_, _ = e.Dyn.Resource(s.gvr).Namespace(ns).Patch(ctx, p.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
}

// waitData waits until the ConfigMap ns/name, read with dyn, has
// data.message want.
func waitData(t *testing.T, dyn dynamic.Interface, ns, name, want string) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	eventually(t, 60*time.Second, "ConfigMap "+name+" says "+want, func(ctx context.Context) error {
		cm, err := dyn.Resource(configMapGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if msg, _, _ := unstructured.NestedString(cm.Object, "data", "message"); msg != want {
			return fmt.Errorf("data.message = %q", msg)
		}
		got = cm
		return nil
	})
	return got
}

// A parent fans out to the workload cluster and the local one: both
// ConfigMaps exist, the remote one with no ownerReference but its
// parent's UID label and loom.dev/owner; an edit reaches both; drift on
// the remote one is repaired; a remote child that stops rendering is
// pruned there, and the local one stays; deleting the parent deletes its
// remote child first (finalizer loom.dev/remote-children).
func TestWorkloadClusterChildren(t *testing.T) {
	w := workload(t)
	e := env.From(t)
	t.Parallel()
	ns, loomNS := e.NewNamespace(t), e.NewNamespace(t)
	w.namespace(t, ns)
	register(t, loomNS, "w1", w.kubeconfig)
	s := fanoutSet(t, "Fanout")
	l := startFanoutLoom(t, s, ns, loomNS)
	s.create(t, ns, "web", "message: hello\n")
	waitConditionGVR(t, s.gvr, ns, "web", "Ready", "True")

	parent, err := e.Get(context.Background(), s.gvr, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	local := waitData(t, e.Dyn, ns, "web-local", "hello")
	if refs := local.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != parent.GetUID() {
		t.Errorf("the local child's ownerReferences = %v, want its parent", refs)
	}
	remote := waitData(t, w.dyn, ns, "web-remote", "hello")
	if refs := remote.GetOwnerReferences(); len(refs) != 0 {
		t.Errorf("the remote child's ownerReferences = %v, want none", refs)
	}
	if got := remote.GetLabels()["loom.dev/parent-uid"]; got != string(parent.GetUID()) {
		t.Errorf("the remote child's loom.dev/parent-uid = %q, want %q", got, parent.GetUID())
	}
	if want := fmt.Sprintf("%s/v1/Fanout/%s/web/%s", installGroup, ns, parent.GetUID()); remote.GetAnnotations()["loom.dev/owner"] != want {
		t.Errorf("the remote child's loom.dev/owner = %q, want %q", remote.GetAnnotations()["loom.dev/owner"], want)
	}
	if _, err := e.Get(context.Background(), configMapGVR, ns, "web-remote"); !isNotFound(err) {
		t.Errorf("web-remote in the local cluster: %v, want NotFound", err)
	}
	kids, _, _ := unstructured.NestedSlice(parent.Object, "status", "children")
	var clusters []string
	for _, k := range kids {
		m, _ := k.(map[string]any)
		clusters = append(clusters, fmt.Sprintf("%v:%v", m["cluster"], m["name"]))
	}
	if !slices.Equal(clusters, []string{"<nil>:web-local", "w1:web-remote"}) {
		t.Errorf("status.children (cluster:name) = %v, want [<nil>:web-local w1:web-remote]", clusters)
	}

	// Loom, run with what loom rbac generates for --loom-namespace, finds
	// no permission missing: its self-check asks for the Secrets of that
	// namespace.
	eventually(t, 30*time.Second, "Loom is ready, with no missing permission", func(context.Context) error { return l.mgr.Ready() })

	// An edit reaches both clusters.
	patchObject(t, s.gvr, ns, "web", `{"spec":{"message":"edited"}}`)
	waitData(t, e.Dyn, ns, "web-local", "edited")
	waitData(t, w.dyn, ns, "web-remote", "edited")

	// Steady state: nothing is written, in either cluster (the counter
	// sees the local cluster's requests; the remote child's
	// resourceVersion says whether it was written).
	waitConditionGVR(t, s.gvr, ns, "web", "Ready", "True")
	time.Sleep(2 * time.Second)
	l.writes.reset()
	before := waitData(t, w.dyn, ns, "web-remote", "edited").GetResourceVersion()
	time.Sleep(5 * time.Second)
	if n, reqs := l.writes.snapshot(); n != 0 {
		t.Errorf("%d writes at steady state: %v", n, reqs)
	}
	if after := waitData(t, w.dyn, ns, "web-remote", "edited").GetResourceVersion(); after != before {
		t.Errorf("the remote child was written at steady state: resourceVersion %s, then %s", before, after)
	}

	// Drift in the workload cluster is repaired.
	if _, err := w.dyn.Resource(configMapGVR).Namespace(ns).Patch(context.Background(), "web-remote", types.MergePatchType,
		[]byte(`{"data":{"message":"drifted"}}`), metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	waitData(t, w.dyn, ns, "web-remote", "edited")

	// The remote child stops rendering: pruned there; the local one stays.
	patchObject(t, s.gvr, ns, "web", `{"spec":{"remote":"off"}}`)
	eventually(t, 60*time.Second, "web-remote is pruned in the workload cluster", func(ctx context.Context) error {
		if _, err := w.dyn.Resource(configMapGVR).Namespace(ns).Get(ctx, "web-remote", metav1.GetOptions{}); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	waitData(t, e.Dyn, ns, "web-local", "edited")
	eventually(t, 60*time.Second, "the parent has no remote-children finalizer once no child is left there", func(ctx context.Context) error {
		p, err := e.Get(ctx, s.gvr, ns, "web")
		if err != nil {
			return err
		}
		if slices.Contains(p.GetFinalizers(), "loom.dev/remote-children") {
			return fmt.Errorf("finalizers %v", p.GetFinalizers())
		}
		return nil
	})

	// Deleting the parent deletes its remote child (the workload cluster
	// has no garbage collector, and no ownerReference could reach it),
	// then the parent goes.
	patchObject(t, s.gvr, ns, "web", `{"spec":{"remote":"on"}}`)
	waitData(t, w.dyn, ns, "web-remote", "edited")
	p, err := e.Get(context.Background(), s.gvr, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.GetFinalizers(), "loom.dev/remote-children") || p.GetAnnotations()["loom.dev/remote-clusters"] != "w1" {
		t.Errorf("finalizers %v, loom.dev/remote-clusters %q; want loom.dev/remote-children listing w1", p.GetFinalizers(), p.GetAnnotations()["loom.dev/remote-clusters"])
	}
	if err := e.Dyn.Resource(s.gvr).Namespace(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "web-remote is deleted in the workload cluster, then the parent is gone", func(ctx context.Context) error {
		if _, err := w.dyn.Resource(configMapGVR).Namespace(ns).Get(ctx, "web-remote", metav1.GetOptions{}); !isNotFound(err) {
			return fmt.Errorf("web-remote still there (%v)", err)
		}
		if _, err := e.Get(ctx, s.gvr, ns, "web"); !isNotFound(err) {
			return fmt.Errorf("the parent still there (%v)", err)
		}
		return nil
	})
}

// closedPortKubeconfig is a kubeconfig whose server answers nothing: a
// closed port on loopback.
const closedPortKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: down
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: down
  user: {token: unused}
contexts:
- name: down
  context: {cluster: down, user: down}
current-context: down
`

// A registered cluster that does not answer: the parent is Ready=False
// ClusterUnreachable naming it and its error, with a Warning Event and
// loom_cluster_reachable 0; its children in the local cluster and in the
// cluster that answers are applied all the same. Registered again with a
// kubeconfig that reaches a server, its child is created there, and the
// others are neither written again nor deleted.
func TestWorkloadClusterUnreachable(t *testing.T) {
	w := workload(t)
	e := env.From(t)
	t.Parallel()
	ns, loomNS := e.NewNamespace(t), e.NewNamespace(t)
	w.namespace(t, ns)
	register(t, loomNS, "w1", w.kubeconfig)
	register(t, loomNS, "down", []byte(closedPortKubeconfig))
	s := newInstallSet(t, "Outage", `
schema:
  spec:
    message: string
clusters:
  names: [w1, down]
`, "outage")
	s.write(t, "configmap.yaml", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-local
data:
  message: {{ .Spec.message | default "none" | quote }}
{{- range .Clusters }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Name }}-{{ .Name }}
  annotations:
    loom.dev/cluster: {{ .Name }}
data:
  message: {{ $.Spec.message | default "none" | quote }}
{{- end }}
`)
	l := startFanoutLoom(t, s, ns, loomNS)
	s.create(t, ns, "web", "message: hello\n")

	waitDegraded(t, s.gvr, ns, "web", "ClusterUnreachable", "cluster down does not answer", "127.0.0.1:1")
	waitConditionGVR(t, s.gvr, ns, "web", "Ready", "False")
	waitEvent(t, ns, "web", "Warning", "ClusterUnreachable", "cluster down")
	waitData(t, e.Dyn, ns, "web-local", "hello")
	w1 := waitData(t, w.dyn, ns, "web-w1", "hello")
	if got := l.counter(t, "loom_cluster_reachable", map[string]string{"cluster": "down"}); got != 0 {
		t.Errorf("loom_cluster_reachable{cluster=down} = %v, want 0", got)
	}
	if got := l.counter(t, "loom_cluster_reachable", map[string]string{"cluster": "w1"}); got != 1 {
		t.Errorf("loom_cluster_reachable{cluster=w1} = %v, want 1", got)
	}

	// The cluster answers again (its Secret now reaches a server): its
	// child is created, and nothing else is written or deleted.
	sec, err := e.Kube.CoreV1().Secrets(loomNS).Get(context.Background(), "down", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["kubeconfig"] = w.kubeconfig
	if _, err := e.Kube.CoreV1().Secrets(loomNS).Update(context.Background(), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConditionGVR(t, s.gvr, ns, "web", "Ready", "True")
	waitData(t, w.dyn, ns, "web-down", "hello")
	if again := waitData(t, w.dyn, ns, "web-w1", "hello"); again.GetResourceVersion() != w1.GetResourceVersion() || again.GetUID() != w1.GetUID() {
		t.Errorf("web-w1 was written or replaced while the other cluster came back: uid %s rv %s, then uid %s rv %s",
			w1.GetUID(), w1.GetResourceVersion(), again.GetUID(), again.GetResourceVersion())
	}
	if got := l.counter(t, "loom_cluster_reachable", map[string]string{"cluster": "down"}); got != 1 {
		t.Errorf("loom_cluster_reachable{cluster=down} = %v, want 1", got)
	}
}

// The registration of a cluster is deleted before the parents with
// children there: a deleted parent waits, Degraded DeletionBlocked, with a
// message that names the cluster and what to do. One annotated
// loom.dev/abandon-cluster-children goes, its child left there; the other
// goes once the cluster is registered again, its child deleted there.
func TestWorkloadClusterRegistrationDeletedFirst(t *testing.T) {
	w := workload(t)
	e := env.From(t)
	t.Parallel()
	ns, loomNS := e.NewNamespace(t), e.NewNamespace(t)
	w.namespace(t, ns)
	register(t, loomNS, "w1", w.kubeconfig)
	s := fanoutSet(t, "Teardown")
	startFanoutLoom(t, s, ns, loomNS)
	for _, name := range []string{"kept", "left"} {
		s.create(t, ns, name, "message: hello\n")
		waitConditionGVR(t, s.gvr, ns, name, "Ready", "True")
		waitData(t, w.dyn, ns, name+"-remote", "hello")
	}

	if err := e.Kube.CoreV1().Secrets(loomNS).Delete(context.Background(), "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kept", "left"} {
		if err := e.Dyn.Resource(s.gvr).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDegraded(t, s.gvr, ns, name, "DeletionBlocked", "cluster w1", "register the cluster again", "loom.dev/abandon-cluster-children=w1")
	}

	// An admin abandons the children of "left" in w1: it goes, its child stays.
	patchObject(t, s.gvr, ns, "left", `{"metadata":{"annotations":{"loom.dev/abandon-cluster-children":"w1"}}}`)
	eventually(t, 60*time.Second, "left is gone", func(ctx context.Context) error {
		if _, err := e.Get(ctx, s.gvr, ns, "left"); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	waitData(t, w.dyn, ns, "left-remote", "hello")

	// w1 is registered again: "kept" deletes its child there, then goes.
	register(t, loomNS, "w1", w.kubeconfig)
	eventually(t, 60*time.Second, "kept-remote is deleted in the workload cluster, then kept is gone", func(ctx context.Context) error {
		if _, err := w.dyn.Resource(configMapGVR).Namespace(ns).Get(ctx, "kept-remote", metav1.GetOptions{}); !isNotFound(err) {
			return fmt.Errorf("kept-remote still there (%v)", err)
		}
		if _, err := e.Get(ctx, s.gvr, ns, "kept"); !isNotFound(err) {
			return fmt.Errorf("kept still there (%v)", err)
		}
		return nil
	})
}
