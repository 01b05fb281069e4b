//go:build e2e

// Package e2e tests Loom's controller against the real API server of the
// local cluster (make cluster). Each test runs its own controller in
// process, limited to a namespace of its own, so tests run in parallel
// without seeing each other's objects.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loom-operator/loom/internal/testutil"
)

var (
	// cfg reaches the local cluster's API server.
	cfg *rest.Config
	// dyn and kube are clients for the tests' own reads and writes.
	dyn  dynamic.Interface
	kube kubernetes.Interface
	// repoRoot is the repository's root folder.
	repoRoot string
)

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n\nThe e2e tests need the local cluster: run them with `make test`, or `make cluster` first.\n", err)
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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := testutil.Connect(ctx, kubeconfigPath(), filepath.Join(root, "crds"))
	if err != nil {
		return err
	}
	cfg, dyn, kube = c.Config, c.Dyn, c.Kube
	return nil
}

// kubeconfigPath is the kubeconfig the tests use, for kubectl and bin/loom.
func kubeconfigPath() string {
	if p := os.Getenv("KUBECONFIG"); p != "" {
		return p
	}
	return filepath.Join(repoRoot, ".cluster", "kubeconfig")
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &metav1.ObjectMeta{GenerateName: "e2e-"}
	created, err := kube.CoreV1().Namespaces().Create(context.Background(), nsObject(ns), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		err := kube.CoreV1().Namespaces().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", created.Name, err)
		}
		if err := testutil.DeleteRollouts(context.Background(), dyn, created.Name); err != nil {
			t.Errorf("%v", err)
		}
	})
	return created.Name
}
