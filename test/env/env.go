package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loom-operator/loom/internal/testutil"
)

// Env is what a cluster test reaches the local cluster and the repository
// through.
type Env struct {
	// Config reaches the local cluster's API server.
	Config *rest.Config
	// Dyn and Kube are clients for the tests' own reads and writes.
	Dyn  dynamic.Interface
	Kube kubernetes.Interface
	// Root is the repository's root folder.
	Root string
	// Kubeconfig is the kubeconfig the tests use, for kubectl and bin/loom.
	Kubeconfig string
	// Binary is bin/loom, as make build leaves it.
	Binary string
	// Workload is the workload cluster (hack/cluster/workload.sh), nil
	// when the suite has none: LOOM_E2E_WORKLOAD_KUBECONFIG unset and no
	// .cluster-workload/kubeconfig. A test that needs it calls
	// NeedWorkload, which fails without it.
	Workload *Cluster

	opts Options
}

// Options say how a suite sets its Env up.
type Options struct {
	// Suite names the suite in the message printed when setup fails.
	Suite string
	// Hint says, after a failed setup, how to run the suite.
	Hint string
	// SetupTimeout bounds connecting and installing the CRDs.
	SetupTimeout time.Duration
	// NeedBinary fails setup when bin/loom is missing.
	NeedBinary bool
	// NamespacePrefix is the prefix of the namespaces NewNamespace creates.
	NamespacePrefix string
	// Settle makes setup wait until no namespace is terminating, and
	// NewNamespace's cleanup wait until its namespace is gone: for suites
	// that count the API server's writes, which a namespace still being
	// deleted would add to.
	Settle bool
}

// the is the one Env of this test binary, set by Main before any test runs.
var the *Env

// Main sets up the Env of a suite, runs its tests and exits: a suite's
// TestMain is this one call. Setup fails loudly (and the suite with it)
// when the cluster cannot be reached.
func Main(m *testing.M, o Options) {
	e, err := setup(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n\n%s\n", o.Suite, err, o.Hint)
		os.Exit(1)
	}
	the = e
	os.Exit(m.Run())
}

// From returns the suite's Env, and fails the test if Main did not set it
// up.
func From(t testing.TB) *Env {
	t.Helper()
	if the == nil {
		t.Fatal("no test environment: the suite's TestMain must call env.Main")
	}
	return the
}

// setup connects to the cluster named by KUBECONFIG (or the repository's
// .cluster/kubeconfig) and installs the CRDs; the working folder is a
// suite's, two levels below the repository's root.
func setup(o Options) (*Env, error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return nil, err
	}
	e := &Env{Root: root, Binary: filepath.Join(root, "bin", "loom"), opts: o}
	// kubectl's discovery cache of its own: the shared ~/.kube/cache
	// remembers the versions a kind was served in before (make run's
	// MyResource v1), and kubectl then asks for one the suite's CRD does
	// not serve ("the server could not find the requested resource").
	cache, err := os.MkdirTemp("", "loom-"+o.Suite+"-kubecache-")
	if err != nil {
		return nil, err
	}
	if err := os.Setenv("KUBECACHEDIR", cache); err != nil {
		return nil, err
	}
	e.Kubeconfig = os.Getenv("KUBECONFIG")
	if e.Kubeconfig == "" {
		e.Kubeconfig = filepath.Join(root, ".cluster", "kubeconfig")
	}
	if o.NeedBinary {
		if _, err := os.Stat(e.Binary); err != nil {
			return nil, fmt.Errorf("bin/loom is missing (make build): %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.SetupTimeout)
	defer cancel()
	c, err := testutil.Connect(ctx, e.Kubeconfig, filepath.Join(root, "crds"))
	if err != nil {
		return nil, err
	}
	e.Config, e.Dyn, e.Kube = c.Config, c.Dyn, c.Kube
	if e.Workload, err = connectWorkload(ctx, root); err != nil {
		return nil, err
	}
	if o.Settle {
		// Namespaces still being deleted (by the e2e suite that ran before)
		// would add their deletes to the API server's write counts.
		if err := e.waitNoTerminatingNamespaces(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Env) waitNoTerminatingNamespaces(ctx context.Context) error {
	var terminating []string
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := e.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		terminating = terminating[:0]
		for _, ns := range list.Items {
			if ns.Status.Phase == corev1.NamespaceTerminating {
				terminating = append(terminating, ns.Name)
			}
		}
		return len(terminating) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("namespaces still terminating: %v: %w", terminating, err)
	}
	return nil
}

// Path is a path in the repository.
func (e *Env) Path(elem ...string) string {
	return filepath.Join(append([]string{e.Root}, elem...)...)
}

// Get reads an object, or returns the error.
func (e *Env) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return e.Dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Events lists the Events recorded on an object.
func (e *Env) Events(ctx context.Context, namespace, name string) ([]corev1.Event, error) {
	list, err := e.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ApplyCRD server-side applies one CRD and waits until it is established.
func (e *Env) ApplyCRD(ctx context.Context, raw []byte) error {
	return testutil.ApplyCRD(ctx, e.Dyn, raw)
}
