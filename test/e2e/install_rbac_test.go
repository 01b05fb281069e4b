//go:build e2e

package e2e

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/test/env"
)

// With --install-crds, Loom needs what deploy/loom.yaml grants plus what
// its rules' comment documents: create and patch on CRDs (and, as for every
// parent kind, the parents, their status and finalizers). The test runs Loom as the
// shipped ServiceAccount with only that added, from no CRD to a Ready
// parent.
func TestInstallCRDsWithDocumentedRBAC(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ctx := context.Background()
	installRBAC(t)
	ns := e.NewNamespace(t)
	s := newInstallSet(t, "Permitted", installSchema, "v0")
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "loom-e2e-install-crds"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{installGroup}, Resources: []string{s.gvr.Resource}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{installGroup}, Resources: []string{s.gvr.Resource + "/status"}, Verbs: []string{"get", "patch", "update"}},
			{APIGroups: []string{installGroup}, Resources: []string{s.gvr.Resource + "/finalizers"}, Verbs: []string{"update"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "loom", Namespace: "loom-system"}},
	}
	if _, err := e.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	if _, err := e.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	startLoom(t, s.root, ns, loomOptions{installCRDs: true, impersonate: "system:serviceaccount:loom-system:loom"})
	s.waitEstablished(t)
	s.create(t, ns, "web", `{image: nginx}`)
	s.waitReady(t, ns, "web", map[string]string{"marker": "v0", "image": "nginx"})
}
