//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/test/env"
)

// grant binds a new ClusterRole with rules to user, and removes both when
// the test ends.
func grant(t *testing.T, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	e := env.From(t)
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := e.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}},
	}
	if _, err := e.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = e.Kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

var all = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// baseRules are Loom's RBAC for MyResource parents with ConfigMap, Service
// and Deployment children, without Secrets and without rollouts.
var baseRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"example.loom.dev"}, Resources: []string{"myresources"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"example.loom.dev"}, Resources: []string{"myresources/status"}, Verbs: []string{"get", "patch", "update"}},
	{APIGroups: []string{"example.loom.dev"}, Resources: []string{"myresources/finalizers"}, Verbs: []string{"update"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps", "services"}, Verbs: all},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: all},
	{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
}

// A child kind Loom may not list (Secrets missing from its RBAC) degrades
// the parents that render it, with the API server's reason, within
// seconds; their other children are applied, other parents are not held
// up, and granting the permission heals them with no restart. On the old
// code the reconcile waited for the cache sync until its 30 s timeout, the
// status write then failed on the expired context, and the parent showed
// nothing.
func TestChildKindLoomMayNotList(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	user := "loom-nolist-" + ns
	grant(t, user, user, baseRules...)
	// The reconcile timeout is far longer than waitDegraded's 30 s: a
	// reconcile that waited for the cache to sync until its timeout, as
	// the old code did, shows nothing in time.
	startLoom(t, driftSetDir(t), ns, loomOptions{impersonate: user, reconcileTimeout: 10 * time.Minute})
	createParent(t, ns, `{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, metadata: {name: s}, spec: {image: x}}`)
	createParent(t, ns, `{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, metadata: {name: t}, spec: {image: x}}`)
	waitDegraded(t, myresGVR, ns, "s", "ApplyFailed", "cannot watch secrets", "forbidden")
	waitDegraded(t, myresGVR, ns, "t", "ApplyFailed", "cannot watch secrets", "forbidden")
	waitEvent(t, ns, "s", "Warning", "ApplyFailed", "cannot watch secrets")
	waitReplicas(t, ns, "s", 1) // the other children are applied
	waitReplicas(t, ns, "t", 1)

	grant(t, user+"-secrets", user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: all})
	waitCondition(t, ns, "s", "Ready", "True")
	waitCondition(t, ns, "t", "Ready", "True")
	if _, err := e.Get(context.Background(), secretGVR, ns, "s-secret"); err != nil {
		t.Errorf("the Secret child after the grant: %v", err)
	}
}
