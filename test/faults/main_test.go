//go:build e2e

// Package faults tests that Loom survives the faults a real cluster throws
// at it: the API server restarted, etcd compacted under its watches, Loom
// itself killed, a storm of conflicting writes, a parent that always fails
// beside one that never stops changing, an autoscaler owning a field, and
// thousands of objects that are none of Loom's business.
//
// Each test runs bin/loom as users run it, in a process of its own, against
// the local cluster (make cluster), and holds over the whole run: nothing
// lost (every parent Ready with all its children), nothing deleted that
// should stay (children keep their UIDs), and no hot loop (Loom's writes,
// counted by the API server, stay within a budget per parent, and its
// writes and reconciles stop once everything is Ready).
//
// The tests restart cluster components, so they run one at a time, and
// never beside the parallel e2e suite: hack/e2e.sh runs them after it.
package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loom-operator/loom/internal/testutil"
)

var (
	// dyn and kube are the tests' own clients of the local cluster.
	dyn  dynamic.Interface
	kube kubernetes.Interface
	// repoRoot is the repository's root folder.
	repoRoot string
)

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "faults: %v\n\nThe fault tests need the local cluster and bin/loom: run them with `make test-faults` or `make test`.\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func setup() error {
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	repoRoot = root
	if _, err := os.Stat(filepath.Join(root, "bin", "loom")); err != nil {
		return fmt.Errorf("bin/loom is missing (make build): %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := testutil.Connect(ctx, kubeconfigPath(), filepath.Join(root, "crds"))
	if err != nil {
		return err
	}
	dyn, kube = c.Dyn, c.Kube
	// Namespaces still being deleted (by the e2e suite that ran before)
	// would add their deletes to the API server's write counts.
	return waitNoTerminatingNamespaces(ctx)
}

// kubeconfigPath is the kubeconfig for the tests, bin/loom and kubectl.
func kubeconfigPath() string {
	if p := os.Getenv("KUBECONFIG"); p != "" {
		return p
	}
	return filepath.Join(repoRoot, ".cluster", "kubeconfig")
}

func waitNoTerminatingNamespaces(ctx context.Context) error {
	var terminating []string
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
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

// newNamespace creates a namespace for one test. When the test ends it
// deletes it and waits until it is gone, so that the next test's write
// counts do not include its deletes.
func newNamespace(t *testing.T) string {
	t.Helper()
	created, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "faults-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	ns := created.Name
	t.Cleanup(func() {
		ctx := context.Background()
		if err := testutil.DeleteRollouts(ctx, dyn, ns); err != nil {
			t.Errorf("%v", err)
		}
		start := time.Now()
		if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
			return
		}
		// Pods wait out their 30 s grace period (kwok plays no kubelet to
		// end it sooner), and so would the namespace: remove them now. A
		// terminating namespace takes no new pods.
		zero := int64(0)
		err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			_ = kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
			_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("namespace %s still there 5 minutes after its deletion", ns)
			return
		}
		t.Logf("namespace %s deleted in %s", ns, time.Since(start).Round(time.Second))
	})
	return ns
}

// clusterScript runs hack/cluster/cluster.sh with args (restart NAME,
// compact) on the same cluster as the tests (the CLUSTER_* port variables
// are inherited), and returns its standard output.
func clusterScript(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "cluster", "cluster.sh"), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cluster.sh %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	t.Logf("cluster.sh %s:\n%s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
	return strings.TrimSpace(string(out))
}
