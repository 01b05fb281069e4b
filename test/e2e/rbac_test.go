//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/test/env"
)

// Loom works with exactly the permissions deploy/loom.yaml grants: the test
// runs it as that ServiceAccount, through impersonation.
func TestShippedRBACIsEnough(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ctx := context.Background()
	installRBAC(t)
	ns := e.NewNamespace(t)
	startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{impersonate: "system:serviceaccount:loom-system:loom"})
	convergeAndPrune(t, ns)
	// The Ready Event was recorded, so events are allowed too.
	evs, err := e.Events(ctx, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 {
		t.Fatal("no Events recorded: is events/create in deploy/chart/files/rbac/rules.yaml?")
	}
}

// deploy/loom.yaml deploys: with the templates ConfigMap its comment
// describes, the Deployment becomes Available (kwok
// plays the kubelet, so the image is not pulled; the API server validates
// everything else).
func TestInClusterManifestsDeploy(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ctx := context.Background()
	installRBAC(t)
	// What `kubectl create configmap --from-file=templates/myresource` makes.
	createTemplatesConfigMap(t, "loom-system", "loom-templates-myresource")
	kubectl(t, "apply", "--server-side", "--field-manager", "e2e", "-f", filepath.Join(e.Root, "deploy", "loom.yaml"))
	t.Cleanup(func() {
		_ = e.Kube.AppsV1().Deployments("loom-system").Delete(ctx, "loom", metav1.DeleteOptions{})
		_ = e.Kube.CoreV1().ConfigMaps("loom-system").Delete(ctx, "loom-templates-myresource", metav1.DeleteOptions{})
		_ = e.Kube.CoreV1().Services("loom-system").Delete(ctx, "loom-metrics", metav1.DeleteOptions{})
		_ = e.Kube.PolicyV1().PodDisruptionBudgets("loom-system").Delete(ctx, "loom", metav1.DeleteOptions{})
	})
	eventually(t, 60*time.Second, "the loom Deployment is Available", func(ctx context.Context) error {
		d, err := e.Kube.AppsV1().Deployments("loom-system").Get(ctx, "loom", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range d.Status.Conditions {
			if c.Type == "Available" && c.Status == corev1.ConditionTrue && d.Status.AvailableReplicas == *d.Spec.Replicas {
				return nil
			}
		}
		return fmt.Errorf("available %d of %d", d.Status.AvailableReplicas, *d.Spec.Replicas)
	})
}

// convergeAndPrune creates the full parent (testdata/parents/full.yaml)
// in ns, waits until it is Ready, then removes its config and waits until
// the ConfigMap is pruned: what an RBAC under test must allow, delete
// included.
func convergeAndPrune(t *testing.T, ns string) {
	t.Helper()
	e := env.From(t)
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")
	patchSpec(t, ns, "web", `{"spec":{"config":null}}`)
	eventually(t, 30*time.Second, "the ConfigMap is pruned", func(ctx context.Context) error {
		if _, err := e.Get(ctx, configMapGVR, ns, "web-config"); !isNotFound(err) {
			return errNotYet
		}
		return nil
	})
}

// installRBAC applies the Namespace, ServiceAccount and RBAC of
// deploy/loom.yaml (not its Deployment), as the install steps of docs/how-to/install.md do.
// Tests that need it may run together.
func installRBAC(t *testing.T) {
	t.Helper()
	e := env.From(t)
	_, err := e.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "loom-system"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	docs := manifestDocs(t, "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
	file := filepath.Join(t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "--server-side", "--field-manager", "e2e", "-f", file)
}

// manifestDocs returns the documents of deploy/loom.yaml whose kind is
// one of kinds.
func manifestDocs(t *testing.T, kinds ...string) []string {
	t.Helper()
	e := env.From(t)
	b, err := os.ReadFile(filepath.Join(e.Root, "deploy", "loom.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("deploy/loom.yaml: %v", err)
		}
		if slices.Contains(kinds, head.Kind) {
			out = append(out, doc)
		}
	}
	if len(out) == 0 {
		t.Fatalf("deploy/loom.yaml has no %v", kinds)
	}
	return out
}

// kubectl runs kubectl against the local cluster and fails the test if it fails.
func kubectl(t *testing.T, args ...string) {
	t.Helper()
	e := env.From(t)
	args = append([]string{"--kubeconfig", e.Kubeconfig}, args...)
	if out, err := exec.Command("kubectl", args...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}
