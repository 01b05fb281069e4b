//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/rbac"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/test/env"
)

// tenantSecret renders a Secret beside installSet's ConfigMap; a parent
// with spec.size also looks up the ConfigMap "platform" of the shared
// namespace (%[1]s).
const tenantSecret = `
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Name }}-token
stringData:
  region: {{ if .Spec.size }}{{ (lookup "v1" "ConfigMap" "%[1]s" "platform").data.region | default "none" }}{{ else }}unset{{ end }}
`

// A set with serviceAccountName writes each parent's children as that
// ServiceAccount of the parent's namespace, and looks up only what it may:
//   - tenant a's account may not create Secrets: its parent is Degraded
//     naming the account and the permission, its ConfigMap is applied,
//     and granting Secrets heals it with no restart;
//   - tenant b's account may do everything: Ready, with the looked-up value;
//   - tenant c has no such account: ServiceAccountUnavailable, healed when
//     the account is created and granted;
//   - tenant d's account may not read the shared ConfigMap: Degraded
//     naming the lookup, though Loom itself may read it.
//
// Loom runs with a token of its own ServiceAccount, bound to exactly what
// `loom rbac` generates for the set, so it impersonates as it would in a
// cluster.
func TestPerSetServiceAccount(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ctx := context.Background()
	shared := e.NewNamespace(t)
	if _, err := e.Kube.CoreV1().ConfigMaps(shared).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "platform"},
		Data: map[string]string{"region": "eu-west"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tail := installSchema + fmt.Sprintf("serviceAccountName: deployer\nlookups:\n- apiVersion: v1\n  kind: ConfigMap\n  namespaces: [%s]\n", shared)
	s := newInstallSet(t, "Tenanted", tail, "v0")
	s.write(t, "secret.yaml", fmt.Sprintf(tenantSecret, shared))

	// Loom's own identity: a ServiceAccount with the generated rules.
	home := e.NewNamespace(t)
	set, err := render.Load(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rbac.FromSet(set)
	if err != nil {
		t.Fatal(err)
	}
	policy := rbac.Generate([]rbac.Set{rs}, rbac.Options{InstallCRDs: true})
	bindPolicy(t, policy, "loom-identity-"+home, types.NamespacedName{Namespace: home, Name: "loom"})
	token := serviceAccountToken(t, home, "loom")

	tenant := func(withAccount bool, rules ...rbacv1.PolicyRule) string {
		ns := e.NewNamespace(t)
		if withAccount {
			createAccount(t, ns, "deployer", rules...)
		}
		return ns
	}
	write := []string{"get", "list", "watch", "create", "patch", "delete"}
	cms := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: write}
	secrets := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: write}
	// Children's ownerReferences block their owner's deletion, which the
	// API server (OwnerReferencesPermissionEnforcement) lets only those
	// who may update the owner's finalizers do.
	owners := rbacv1.PolicyRule{APIGroups: []string{installGroup}, Resources: []string{s.gvr.Resource + "/finalizers"}, Verbs: []string{"update"}}
	a := tenant(true, cms, owners)
	b := tenant(true, cms, secrets, owners)
	c := tenant(false)
	d := tenant(true, cms, secrets, owners)
	grantIn(t, shared, "read-platform-"+b, types.NamespacedName{Namespace: b, Name: "deployer"},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{"platform"}})

	startLoom(t, s.root, "", loomOptions{installCRDs: true, token: token})
	s.waitEstablished(t)
	s.create(t, a, "app", `{image: nginx}`)
	s.create(t, b, "app", `{image: nginx, size: L}`)
	s.create(t, c, "app", `{image: nginx}`)
	s.create(t, d, "app", `{image: nginx, size: L}`)

	waitDegraded(t, s.gvr, a, "app", "ApplyFailed", "system:serviceaccount:"+a+":deployer", "secrets")
	// The API server's owner-reference admission learns a new CRD's kind
	// up to about 30 s after it is served (crdJustCreated); until then a
	// tenant's child is refused for that, and retried with backoff.
	eventually(t, 2*time.Minute, "tenant a's ConfigMap, which its account may write, is applied", func(ctx context.Context) error {
		_, err := e.Get(ctx, configMapGVR, a, "app")
		return err
	})
	eventually(t, 2*time.Minute, "tenant b's parent is Ready", func(ctx context.Context) error {
		p, err := e.Get(ctx, s.gvr, b, "app")
		if err != nil {
			return err
		}
		if st, reason, msg := condition(p, "Ready"); st != "True" {
			return fmt.Errorf("Ready=%s %s: %s", st, reason, msg)
		}
		return nil
	})
	sec, err := e.Kube.CoreV1().Secrets(b).Get(ctx, "app-token", metav1.GetOptions{})
	if err != nil || string(sec.Data["region"]) != "eu-west" {
		t.Errorf("tenant b's Secret: %v, region %q; want the looked-up eu-west", err, sec.Data["region"])
	}
	waitDegraded(t, s.gvr, c, "app", "ServiceAccountUnavailable", "ServiceAccount "+c+"/deployer not found")
	waitDegraded(t, s.gvr, d, "app", "RenderFailed", "ServiceAccount "+d+"/deployer may not get configmaps platform in namespace "+shared)

	// Grants heal without a restart.
	grantIn(t, a, "secrets-"+a, types.NamespacedName{Namespace: a, Name: "deployer"}, secrets)
	createAccount(t, c, "deployer", cms, secrets, owners)
	waitConditionGVR(t, s.gvr, a, "app", "Ready", "True")
	waitConditionGVR(t, s.gvr, c, "app", "Ready", "True")
	// Nothing was written as Loom itself: the children's creator is the account.
	for _, ns := range []string{a, b, c} {
		cm, err := e.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range cm.ManagedFields {
			if f.Manager != "loom" {
				t.Errorf("ConfigMap %s/app has a field manager %q besides loom", ns, f.Manager)
			}
		}
	}
	if !strings.Contains(conditionMessage(t, s.gvr, d, "app", "Degraded"), "may not get") {
		t.Error("tenant d healed without a grant")
	}
}

// createAccount creates a ServiceAccount with a Role of rules bound to it.
func createAccount(t *testing.T, ns, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	e := env.From(t)
	if _, err := e.Kube.CoreV1().ServiceAccounts(ns).Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grantIn(t, ns, name, types.NamespacedName{Namespace: ns, Name: name}, rules...)
}

// grantIn binds a new Role of rules in ns to the ServiceAccount sa.
func grantIn(t *testing.T, ns, name string, sa types.NamespacedName, rules ...rbacv1.PolicyRule) {
	t.Helper()
	e := env.From(t)
	ctx := context.Background()
	if _, err := e.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// serviceAccountToken creates the ServiceAccount and returns a token of it.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	e := env.From(t)
	ctx := context.Background()
	if _, err := e.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	exp := int64(3600)
	tr, err := e.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// conditionMessage returns the message of a parent's condition.
func conditionMessage(t *testing.T, gvr schema.GroupVersionResource, ns, name, typ string) string {
	t.Helper()
	e := env.From(t)
	p, err := e.Get(context.Background(), gvr, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	_, _, msg := condition(p, typ)
	return msg
}
