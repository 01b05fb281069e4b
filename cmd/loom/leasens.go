package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/internal/kubeclient"
)

// defaultServiceAccountNamespaceFile is where a pod finds its namespace
// (the kubelet mounts it with the service account's token).
const defaultServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// serviceAccountNamespaceFile is defaultServiceAccountNamespaceFile, but
// for tests.
var serviceAccountNamespaceFile = defaultServiceAccountNamespaceFile

// leaseNamespace returns the namespace of loom run's Leases: set, the
// value of flag; else the pod's own namespace ($POD_NAMESPACE, else the
// service account's namespace file). Out of a pod it fails, naming flag.
func leaseNamespace(set, flag string) (string, error) {
	if set != "" {
		return set, nil
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile(serviceAccountNamespaceFile)
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns, nil
	}
	return "", fmt.Errorf("%s is not set and Loom is not running in a pod (no $POD_NAMESPACE, no %s) to default it to the pod's namespace: set %s",
		flag, serviceAccountNamespaceFile, flag)
}

// loomNamespace returns loom run's --loom-namespace: set, the value of
// the flag; else the pod's own namespace (as leaseNamespace finds it);
// else offline.DefaultLoomNamespace, the default of loom render's and
// loom test's flag of the same name.
func loomNamespace(set string) string {
	if ns, err := leaseNamespace(set, "--loom-namespace"); err == nil {
		return ns
	}
	return offline.DefaultLoomNamespace
}

// checkLeaseNamespace fails if the namespace of loom run's Leases does
// not exist: the Leases could never be created, and loom run would wait
// for them forever. An answer other than NotFound (no permission to read
// namespaces, say) lets it go on.
func checkLeaseNamespace(ctx context.Context, cfg *rest.Config, ns, flag string) error {
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create clientset: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("namespace %q of the Leases (%s) does not exist: create it, or set %s to a namespace that does", ns, flag, flag)
	case err != nil && !errors.Is(err, context.Canceled):
		klog.FromContext(ctx).V(1).Info("Cannot tell whether the Leases' namespace exists", "namespace", ns, "flag", flag, "err", err)
	}
	return nil
}
