//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Loom works with exactly the permissions deploy/rbac.yaml grants: the test
// runs it as that ServiceAccount, through impersonation.
func TestShippedRBACIsEnough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "loom-system"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	out, err := exec.Command("kubectl", "--kubeconfig", kubeconfigPath(), "apply", "--server-side", "--field-manager", "e2e",
		"-f", filepath.Join(repoRoot, "deploy", "rbac.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply deploy/rbac.yaml: %v\n%s", err, out)
	}
	ns := newNamespace(t)
	startLoom(t, filepath.Join(repoRoot, "templates"), ns, loomOptions{impersonate: "system:serviceaccount:loom-system:loom"})
	createParent(t, ns, fullParent)
	waitCondition(t, ns, "web", "Ready", "True")
	// Pruning needs delete: remove the config so the ConfigMap goes.
	if _, err := dyn.Resource(myresGVR).Namespace(ns).Patch(ctx, "web", "application/merge-patch+json",
		[]byte(`{"spec":{"config":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the ConfigMap is pruned", func(ctx context.Context) error {
		if _, err := get(ctx, configMapGVR, ns, "web-config"); !isNotFound(err) {
			return errNotYet
		}
		return nil
	})
	// The Ready Event was recorded, so events are allowed too.
	evs, err := events(ctx, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 {
		t.Fatal("no Events recorded: is events/create in deploy/rbac.yaml?")
	}
}
