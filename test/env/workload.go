package env

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// WorkloadKubeconfigEnv names the environment variable that gives the
// workload cluster's kubeconfig (hack/e2e.sh sets it); without it, the
// repository's .cluster-workload/kubeconfig is used if it is there.
const WorkloadKubeconfigEnv = "LOOM_E2E_WORKLOAD_KUBECONFIG"

// Cluster is a second cluster the tests reach: the workload cluster
// (hack/cluster/workload.sh), a bare control plane (etcd and
// kube-apiserver, no controllers, no nodes) that children in other
// clusters are placed in. No CRD is installed in it.
type Cluster struct {
	// Config reaches its API server.
	Config *rest.Config
	// Dyn and Kube are clients for the tests' own reads and writes.
	Dyn  dynamic.Interface
	Kube kubernetes.Interface
	// Kubeconfig is its kubeconfig file, for bin/loom, kubectl and the
	// registration Secrets the tests write.
	Kubeconfig string
}

// workloadKubeconfig returns the workload cluster's kubeconfig, and
// whether the environment variable named it (then it must be there).
func workloadKubeconfig(root string) (string, bool) {
	if p := os.Getenv(WorkloadKubeconfigEnv); p != "" {
		return p, true
	}
	return filepath.Join(root, ".cluster-workload", "kubeconfig"), false
}

// connectWorkload connects to the workload cluster. It returns nil and no
// error when no kubeconfig names one (the variable unset and no
// .cluster-workload/kubeconfig), and an error when one is named and cannot
// be reached.
func connectWorkload(ctx context.Context, root string) (*Cluster, error) {
	path, named := workloadKubeconfig(root)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && !named {
		return nil, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("workload cluster: load kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	c := &Cluster{Config: cfg, Kubeconfig: path}
	if c.Dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("workload cluster: %w", err)
	}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("workload cluster: %w", err)
	}
	if _, err := c.Kube.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("workload cluster: reach the API server at %s (kubeconfig %s; hack/cluster/workload.sh up starts it): %w",
			cfg.Host, path, err)
	}
	return c, nil
}

// NeedWorkload returns the workload cluster, and fails the test (never
// skips it) when the suite has none: make test and hack/e2e.sh start it,
// make cluster-workload starts it by hand.
func (e *Env) NeedWorkload(t testing.TB) *Cluster {
	t.Helper()
	if e.Workload == nil {
		path, _ := workloadKubeconfig(e.Root)
		t.Fatalf("this test needs the workload cluster, and there is none: no %s and no %s; start it with make cluster-workload (make test and hack/e2e.sh start it)",
			WorkloadKubeconfigEnv, path)
	}
	return e.Workload
}

// WorkloadScript runs hack/cluster/workload.sh with args (restart NAME,
// stop NAME, start NAME) on the workload cluster the suite reaches, whose
// state folder is its kubeconfig's (WORKLOAD_STATE, unless set), and
// returns its standard output; it fails the test if the script fails. A
// workload cluster started from another checkout needs CLUSTER_BIN, as
// cluster.sh does.
func (e *Env) WorkloadScript(t testing.TB, args ...string) string {
	t.Helper()
	c := e.NeedWorkload(t)
	cmd := exec.Command(e.Path("hack", "cluster", "workload.sh"), args...)
	cmd.Env = os.Environ()
	if os.Getenv("WORKLOAD_STATE") == "" {
		cmd.Env = append(cmd.Env, "WORKLOAD_STATE="+filepath.Dir(c.Kubeconfig))
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("workload.sh %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	t.Logf("workload.sh %s:\n%s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
	return strings.TrimSpace(string(out))
}

// CreateNamespace creates the namespace name in the cluster (the name of
// a test's namespace in the local cluster, where a parent's remote
// children go), and deletes it, with what is in it, when the test ends
// (as NewNamespace's).
func (c *Cluster) CreateNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := c.Kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s in the workload cluster: %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.deleteNamespace(context.Background(), name); err != nil {
			t.Errorf("workload cluster: %v", err)
		}
	})
}

// NewNamespace creates a namespace in the cluster for one test, and
// deletes it, with what is in it, when the test ends. The cluster has no
// namespace controller to empty a deleted namespace, so the cleanup does
// its work: it deletes the namespace (no object can be created in it
// since), every collection of namespaced objects in it, then finalizes it.
func (c *Cluster) NewNamespace(t *testing.T, prefix string) string {
	t.Helper()
	created, err := c.Kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace in the workload cluster: %v", err)
	}
	ns := created.Name
	t.Cleanup(func() {
		if err := c.deleteNamespace(context.Background(), ns); err != nil {
			t.Errorf("workload cluster: %v", err)
		}
	})
	return ns
}

// deleteNamespace does what the namespace controller would: it deletes
// namespace ns, then each collection of namespaced objects in it, then
// removes the namespace's kubernetes finalizer so that it goes. Objects
// with finalizers of their own stay until those are removed, and so does
// the namespace.
func (c *Cluster) deleteNamespace(ctx context.Context, ns string) error {
	err := c.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	lists, err := c.Kube.Discovery().ServerPreferredNamespacedResources()
	if err != nil {
		return fmt.Errorf("discover namespaced resources: %w", err)
	}
	var errs []error
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if !slices.Contains(r.Verbs, "deletecollection") {
				continue
			}
			err := c.Dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete the %s in namespace %s: %w", r.Name, ns, err))
			}
		}
	}
	got, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return errors.Join(errs...)
	}
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("get namespace %s: %w", ns, err))...)
	}
	got.Spec.Finalizers = nil
	if _, err := c.Kube.CoreV1().Namespaces().Finalize(ctx, got, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("finalize namespace %s: %w", ns, err))
	}
	return errors.Join(errs...)
}
