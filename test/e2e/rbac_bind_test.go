//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loom-operator/loom/test/env"
)

var roleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}

// bindParent is a MyResource whose spec.config.role names the ClusterRole
// that bindSet's RoleBinding refers to.
func bindParent(name, role string) string {
	return fmt.Sprintf("apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: %s\nspec:\n  image: nginx:1.27\n  config:\n    role: %s\n", name, role)
}

// Loom run with exactly what `loom rbac` generates for a set whose
// RoleBinding's roleRef comes from the parent's spec, with loom.yaml
// listing view as the one role it may bind: a parent asking for view gets
// its RoleBinding; a parent asking for cluster-admin gets a render error
// at the roleRef's line and no binding; and the API server itself refuses
// Loom's user a binding of cluster-admin or edit (Loom holds bind on view
// only, and no escalate), while it accepts one of view.
func TestGeneratedRBACBindsOnlyListedRoles(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "myresource"), map[string]string{
		"loom.yaml": env.Fixture(t, "sets/myresource/loom.yaml") + "bindRoles:\n  - {kind: ClusterRole, name: view}\n",
		"binding.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .Name }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ .Spec.config.role }}
subjects: [{kind: ServiceAccount, name: default, namespace: {{ .Namespace }}}]
`,
	})
	user := generatedUser(t, dir, ns, false)
	startLoom(t, dir, ns, loomOptions{impersonate: user})

	createParent(t, ns, bindParent("viewer", "view"))
	waitCondition(t, ns, "viewer", "Ready", "True")
	rb, err := e.Get(context.Background(), roleBindingGVR, ns, "viewer")
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(rb.Object, "roleRef", "name"); got != "view" {
		t.Errorf("RoleBinding viewer binds %q, want view", got)
	}

	createParent(t, ns, bindParent("admin", "cluster-admin"))
	waitDegraded(t, myresGVR, ns, "admin", "RenderFailed", "binding.yaml:8", `roleRef ClusterRole "cluster-admin" is not a role this set may bind`)
	if _, err := e.Get(context.Background(), roleBindingGVR, ns, "admin"); !isNotFound(err) {
		t.Errorf("RoleBinding admin: %v, want NotFound", err)
	}

	c := rest.CopyConfig(e.Config)
	c.Impersonate.UserName = user
	asLoom, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	for role, allowed := range map[string]bool{"cluster-admin": false, "edit": false, "view": true} {
		b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "direct-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := asLoom.RbacV1().RoleBindings(ns).Create(ctx, b, metav1.CreateOptions{})
		cancel()
		switch {
		case allowed && err != nil:
			t.Errorf("Loom's user binding %s: %v, want it allowed", role, err)
		case !allowed && !apierrors.IsForbidden(err):
			t.Errorf("Loom's user binding %s: %v, want Forbidden", role, err)
		}
	}
}
