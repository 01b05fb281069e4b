//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/rbac"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/test/env"
)

// generatedPolicy is what `loom rbac -t templates/ --namespace ns` prints.
func generatedPolicy(t *testing.T, ns string) rbac.Policy {
	t.Helper()
	e := env.From(t)
	return policyFor(t, filepath.Join(e.Root, "templates"), rbac.Options{Namespace: ns})
}

// policyFor is what `loom rbac -t dir` prints with the flags of o.
func policyFor(t *testing.T, dir string, o rbac.Options) rbac.Policy {
	t.Helper()
	sets, err := render.LoadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rs []rbac.Set
	for _, s := range sets {
		r, err := rbac.FromSet(s)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rbac.Generate(rs, o)
}

// bindPolicy creates p's objects for the ServiceAccount sa (which need not
// exist: Loom impersonates its user name) and deletes them when the test
// ends.
func bindPolicy(t *testing.T, p rbac.Policy, name string, sa types.NamespacedName) {
	t.Helper()
	e := env.From(t)
	ctx := context.Background()
	for _, obj := range p.Objects(name, sa) {
		if err := createRBACObject(ctx, e, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = deleteRBACObject(context.Background(), e, obj) })
	}
}

func createRBACObject(ctx context.Context, e *env.Env, obj runtime.Object) error {
	var err error
	r := e.Kube.RbacV1()
	if m, ok := obj.(metav1.Object); ok && m.GetNamespace() != "" {
		// A generated policy holds Roles in Loom's own namespace
		// (loom-system by default), which a fresh cluster lacks until a
		// test that installs Loom creates it.
		if err := ensureNamespace(ctx, e, m.GetNamespace()); err != nil {
			return err
		}
	}
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		_, err = r.ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.ClusterRoleBinding:
		_, err = r.ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.Role:
		_, err = r.Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.RoleBinding:
		_, err = r.RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		return fmt.Errorf("unexpected %T", obj)
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ensureNamespace creates namespace unless it exists. It is never
// deleted: other tests running beside this one may use it too.
func ensureNamespace(ctx context.Context, e *env.Env, namespace string) error {
	_, err := e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", namespace, err)
	}
	return nil
}

func deleteRBACObject(ctx context.Context, e *env.Env, obj runtime.Object) error {
	r := e.Kube.RbacV1()
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		return r.ClusterRoles().Delete(ctx, o.Name, metav1.DeleteOptions{})
	case *rbacv1.ClusterRoleBinding:
		return r.ClusterRoleBindings().Delete(ctx, o.Name, metav1.DeleteOptions{})
	case *rbacv1.Role:
		return r.Roles(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
	case *rbacv1.RoleBinding:
		return r.RoleBindings(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
	}
	return nil
}

// Loom run as a ServiceAccount that holds exactly what `loom rbac`
// generates for the shipped sets (Roles in the watched namespace, a
// ClusterRole for CRDs) converges a parent with every child, prunes, and
// reports no missing permission.
func TestGeneratedRBACIsEnough(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	sa := types.NamespacedName{Namespace: ns, Name: "loom"}
	bindPolicy(t, generatedPolicy(t, ns), "loom-gen-"+ns, sa)
	l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{impersonate: "system:serviceaccount:" + ns + ":loom"})
	convergeAndPrune(t, ns)
	eventually(t, 30*time.Second, "Loom is ready, with no missing permission", func(context.Context) error { return l.mgr.Ready() })
}

// Each rule `loom rbac` generates is one Loom checks: with any one rule
// removed, Loom's readiness names a permission of that rule within
// seconds, instead of waiting on a cache that can never sync; granting it
// back heals readiness with no restart.
func TestEachGeneratedRuleIsChecked(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	full := generatedPolicy(t, ns)
	if full.Count() < 5 {
		t.Fatalf("only %d rules generated", full.Count())
	}
	for i := range full.Count() {
		less := full.Without(i)
		removed := missingChecks(full, less)
		t.Run(strings.ReplaceAll(removed[0], " ", "_"), func(t *testing.T) {
			t.Parallel()
			user := fmt.Sprintf("loom-less-%d", i)
			sa := types.NamespacedName{Namespace: ns, Name: user}
			bindPolicy(t, less, "loom-less-"+ns+"-"+fmt.Sprint(i), sa)
			l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{impersonate: "system:serviceaccount:" + ns + ":" + user, quiet: true})
			eventually(t, 30*time.Second, "readiness names the removed rule", func(context.Context) error {
				err := l.mgr.Ready()
				if err == nil {
					return fmt.Errorf("Loom is ready without %s", removed[0])
				}
				for _, c := range removed {
					if strings.Contains(err.Error(), c) {
						return nil
					}
				}
				return fmt.Errorf("readiness does not name %v: %w", removed, err)
			})
			if i == 0 { // granting heals, with no restart (once is enough)
				bindPolicy(t, full, "loom-full-"+ns, sa)
				eventually(t, 60*time.Second, "Loom becomes ready once granted", func(context.Context) error { return l.mgr.Ready() })
			}
		})
	}
}

// crdJustCreated runs Loom as admin in a test that creates a CRD just
// before Loom writes children of its kind. Admission
// (OwnerReferencesPermissionEnforcement) resolves the owner's kind of a
// child with blockOwnerDeletion through a mapping the API server refreshes
// about every 30 s, and refuses any user but an admin until it knows the
// kind; Loom retries and converges, but later than these tests wait.
const crdJustCreated = true

// ownerKindDelay is how long after its CRD is created a parent kind is
// surely known to the API server's owner-reference admission (see
// crdJustCreated): its mapping is reset every 30 s.
const ownerKindDelay = 35 * time.Second

// waitOwnerKindsAdmitted waits, before Loom runs as a non-admin, until the
// CRD of each set's parent kind that exists is ownerKindDelay old.
func waitOwnerKindsAdmitted(t *testing.T, sets []*render.Set) {
	t.Helper()
	e := env.From(t)
	for _, s := range sets {
		gvk := s.ParentGVK()
		plural := s.Config.Parent.Plural
		if plural == "" {
			plural = crd.Plural(gvk.Kind)
		}
		obj, err := e.Get(context.Background(), crdGVR, "", plural+"."+gvk.Group)
		if err != nil {
			continue // not there yet: Loom installs it, or a test creates it later
		}
		if d := time.Until(obj.GetCreationTimestamp().Add(ownerKindDelay)); d > 0 {
			t.Logf("waiting %s for the API server's owner-reference admission to know %s", d.Round(time.Second), gvk.Kind)
			time.Sleep(d)
		}
	}
}

// generatedUsers numbers the users generatedUser makes.
var generatedUsers atomic.Int64

// generatedUser returns a new user bound to exactly what `loom rbac`
// prints for the sets in templates that load, with loom run's namespace
// and --install-crds; the bindings go when the test ends.
func generatedUser(t *testing.T, templates, namespace string, installCRDs bool) string {
	t.Helper()
	return generatedUserFor(t, templates, rbac.Options{Namespace: namespace, InstallCRDs: installCRDs})
}

// generatedUserFor is generatedUser for a Loom run with the flags o.
func generatedUserFor(t *testing.T, templates string, o rbac.Options) string {
	t.Helper()
	namespace := o.Namespace
	e := env.From(t)
	sets, _ := render.LoadAll(templates) // a set that fails to load is some test's bad input
	var rs []rbac.Set
	for _, s := range sets {
		if r, err := rbac.FromSet(s); err == nil {
			rs = append(rs, r)
		}
	}
	waitOwnerKindsAdmitted(t, sets)
	p := rbac.Generate(rs, o)
	user := fmt.Sprintf("loom-gen-%d-%s", generatedUsers.Add(1), namespace)
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	for _, obj := range p.Objects(user, types.NamespacedName{Namespace: "unused", Name: "unused"}) {
		switch b := obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			b.Subjects = subject
		case *rbacv1.RoleBinding:
			b.Subjects = subject
		}
		if err := createRBACObject(context.Background(), e, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = deleteRBACObject(context.Background(), e, obj) })
	}
	return user
}

// missingChecks names the permissions full has and less lacks.
func missingChecks(full, less rbac.Policy) []string {
	have := map[string]bool{}
	for _, c := range less.Checks() {
		have[c.String()] = true
	}
	var out []string
	for _, c := range full.Checks() {
		if !have[c.String()] {
			out = append(out, c.String())
		}
	}
	return out
}

// rbac.Resource names offline every kind the API server has built in
// (not its CRDs) as the server's discovery does: the generated rules
// name real resources.
func TestGeneratedResourceNamesAreServed(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	lists, err := e.Kube.Discovery().ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := e.Dyn.Resource(crdGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	custom := map[string]bool{}
	for _, c := range crds.Items {
		g, _, _ := unstructured.NestedString(c.Object, "spec", "group")
		custom[g] = true
	}
	checked := 0
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		if custom[gv.Group] {
			continue // CRDs: their plurals are their own
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue // subresources, and reviews that are only created
			}
			checked++
			if got := rbac.Resource(schema.GroupKind{Group: gv.Group, Kind: r.Kind}); got.Resource != r.Name {
				t.Errorf("rbac.Resource(%s %s) = %q, the server serves %q", gv.Group, r.Kind, got.Resource, r.Name)
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d built-in kinds checked", checked)
	}
}
