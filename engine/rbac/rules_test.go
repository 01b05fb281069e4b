package rbac

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/config"
)

// lines renders a policy as "namespace group resources verbs" lines.
func lines(p Policy) []string {
	var out []string
	add := func(ns string, rules []ruleView) {
		for _, r := range rules {
			out = append(out, fmt.Sprintf("%s %s %s %s", ns, r.group, r.resources, r.verbs))
		}
	}
	add("*", view(p.Cluster))
	for _, ns := range sortedKeys(p.Namespaces) {
		add(ns, view(p.Namespaces[ns]))
	}
	return out
}

func TestGenerate(t *testing.T) {
	parent := config.ParentRef{APIVersion: "shop.example/v1", Kind: "Shop"}
	deploy := Kind{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}}
	cm := Kind{GroupKind: schema.GroupKind{Kind: "ConfigMap"}}
	crole := Kind{GroupKind: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}}
	for _, tc := range []struct {
		name string
		sets []Set
		opts Options
		want []string
	}{
		{
			name: "a set in every namespace",
			sets: []Set{{Config: config.Config{Parent: parent}, Children: []Kind{deploy, cm}}},
			want: []string{
				"* '' configmaps get,list,watch,create,patch,delete",
				"* '' events create,patch",
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"* apps deployments get,list,watch,create,patch,delete",
				"* shop.example shops get,list,watch",
				"* shop.example shops/finalizers update",
				"* shop.example shops/status patch",
			},
		},
		{
			name: "--install-crds in one namespace lists the parents of all",
			sets: []Set{{Config: config.Config{Parent: parent}}},
			opts: Options{Namespace: "shop", InstallCRDs: true},
			want: []string{
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch,create,patch",
				"* shop.example shops list",
				"default '' events create,patch",
				"shop '' events create,patch",
				"shop shop.example shops get,list,watch",
				"shop shop.example shops/finalizers update",
				"shop shop.example shops/status patch",
			},
		},
		{
			name: "--install-crds, several versions: the storage migration rewrites every parent and shrinks storedVersions; the webhook's certificate and caBundle",
			sets: []Set{{Config: config.Config{Parent: parent, Versions: []config.Version{{Name: "v1alpha1"}}}}},
			opts: Options{Namespace: "shop", InstallCRDs: true},
			want: []string{
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch,create,patch",
				"* apiextensions.k8s.io customresourcedefinitions patch [shops.shop.example]",
				"* apiextensions.k8s.io customresourcedefinitions/status patch",
				"* shop.example shops list,update",
				"* storagemigration.k8s.io storageversionmigrations get,create",
				"default '' events create,patch",
				"loom-system '' secrets create",
				"loom-system '' secrets get,update [loom-webhook-tls]",
				"shop '' events create,patch",
				"shop shop.example shops get,list,watch",
				"shop shop.example shops/finalizers update",
				"shop shop.example shops/status patch",
			},
		},
		{
			name: "lookups read only; --install-crds; the Lease",
			sets: []Set{{Config: config.Config{Parent: parent, Lookups: []config.LookupRule{{APIVersion: "v1", Kind: "Secret", Namespaces: []string{"shared"}}}}, Children: []Kind{cm}}},
			opts: Options{InstallCRDs: true, LeaseNamespace: "loom-system"},
			want: []string{
				"* '' configmaps get,list,watch,create,patch,delete",
				"* '' events create,patch",
				"* '' secrets get,list,watch",
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch,create,patch",
				"* shop.example shops get,list,watch",
				"* shop.example shops/finalizers update",
				"* shop.example shops/status patch",
				"loom-system coordination.k8s.io leases get,create,update",
			},
		},
		{
			name: "a set with workload clusters reads the registration Secrets of Loom's namespace only",
			sets: []Set{{Config: config.Config{Parent: parent, Clusters: &config.Clusters{Names: []string{"w1"}}}, Children: []Kind{cm}}},
			opts: Options{Namespace: "shop", LoomNamespace: "loom"},
			want: []string{
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"default '' events create,patch",
				"loom '' secrets get,list,watch",
				"shop '' configmaps get,list,watch,create,patch,delete",
				"shop '' events create,patch",
				"shop shop.example shops get,list,watch,patch",
				"shop shop.example shops/finalizers update",
				"shop shop.example shops/status patch",
			},
		},
		{
			name: "workload clusters, Loom's namespace not given: loom-system",
			sets: []Set{{Config: config.Config{Parent: parent, Clusters: &config.Clusters{Names: []string{"w1"}}}}},
			want: []string{
				"* '' events create,patch",
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"* shop.example shops get,list,watch,patch",
				"* shop.example shops/finalizers update",
				"* shop.example shops/status patch",
				"loom-system '' secrets get,list,watch",
			},
		},
		{
			name: "--sharded: the group's Leases, fenced and deleted too",
			sets: []Set{{Config: config.Config{Parent: parent}, Children: []Kind{cm}}},
			opts: Options{ShardNamespace: "loom-shards"},
			want: []string{
				"* '' configmaps get,list,watch,create,patch,delete",
				"* '' events create,patch",
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"* shop.example shops get,list,watch",
				"* shop.example shops/finalizers update",
				"* shop.example shops/status patch",
				"loom-shards coordination.k8s.io leases get,list,watch,create,update,delete",
			},
		},
		{
			name: "one watched namespace: Roles, lookups in their namespaces, cluster-scoped kinds cluster-wide",
			sets: []Set{{Config: config.Config{Parent: parent,
				Lookups:       []config.LookupRule{{APIVersion: "v1", Kind: "Secret", Namespaces: []string{"shared"}}},
				ClusterScoped: []config.KindRef{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}}},
				Children: []Kind{cm, crole}}},
			opts: Options{Namespace: "shop"},
			want: []string{
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"* rbac.authorization.k8s.io clusterroles get,list,watch,create,patch,delete",
				"default '' events create,patch",
				"shared '' secrets get,list,watch",
				"shop '' configmaps get,list,watch,create,patch,delete",
				"shop '' events create,patch",
				"shop '' secrets get,list,watch",
				"shop shop.example shops get,list,watch,patch",
				"shop shop.example shops/finalizers update",
				"shop shop.example shops/status patch",
			},
		},
		{
			name: "a seeded chart: its seed Secrets, and the parents' loom.dev/seed annotation",
			sets: []Set{{Config: config.Config{Parent: parent}, Children: []Kind{cm}, Seeded: true}},
			opts: Options{Namespace: "shop"},
			want: []string{
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"default '' events create,patch",
				"shop '' configmaps get,list,watch,create,patch,delete",
				"shop '' events create,patch",
				"shop '' secrets get,create,patch,delete",
				"shop shop.example shops get,list,watch,patch",
				"shop shop.example shops/finalizers update",
				"shop shop.example shops/status patch",
			},
		},
		{
			name: "orphans, a seeded chart, a rollout, a cluster-scoped parent with a plural",
			sets: []Set{{Config: config.Config{Parent: config.ParentRef{APIVersion: "shop.example/v1", Kind: "Mouse", Plural: "mice", Scope: "Cluster"},
				Rollout: &config.Policy{}}, Children: []Kind{cm}, Orphans: true, Seeded: true}},
			opts: Options{Namespace: "shop"},
			want: []string{
				"* '' namespaces get",
				"* '' secrets get,create,patch,delete",
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"* loom.dev templaterevisions get,list,create,delete",
				"* loom.dev templatesets get,list,watch,create",
				"* loom.dev templatesets/status update",
				"* shop.example mice get,list,watch,patch",
				"* shop.example mice/finalizers update",
				"* shop.example mice/status patch",
				"default '' events create,patch",
				"shop '' configmaps get,list,watch,create,patch,delete",
				"shop '' events create,patch",
			},
		},
		{
			name: "RBAC children whose templates hold no rules and name no role: no escalate, no bind",
			sets: []Set{{Config: config.Config{Parent: parent}, Children: []Kind{
				{GroupKind: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}},
				{GroupKind: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}},
				{GroupKind: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}}}}},
			opts: Options{Namespace: "shop"},
			want: []string{
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"* rbac.authorization.k8s.io clusterrolebindings get,list,watch,create,patch,delete",
				"default '' events create,patch",
				"shop '' events create,patch",
				"shop rbac.authorization.k8s.io rolebindings,roles get,list,watch,create,patch,delete",
				"shop shop.example shops get,list,watch",
				"shop shop.example shops/finalizers update",
				"shop shop.example shops/status patch",
			},
		},
		{
			name: "a set of several versions: the webhook's Secret, and the caBundle of its CRD",
			sets: []Set{{Config: config.Config{Parent: parent, Versions: []config.Version{{Name: "v1alpha1"}}}}},
			opts: Options{Namespace: "shop", LoomNamespace: "loom"},
			want: []string{
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"* apiextensions.k8s.io customresourcedefinitions patch [shops.shop.example]",
				"default '' events create,patch",
				"loom '' secrets create",
				"loom '' secrets get,update [loom-webhook-tls]",
				"shop '' events create,patch",
				"shop shop.example shops get,list,watch",
				"shop shop.example shops/finalizers update",
				"shop shop.example shops/status patch",
			},
		},
		{
			name: "a set of several versions, cert-manager's certificate: no Secret of Loom's",
			sets: []Set{{Config: config.Config{Parent: parent, Versions: []config.Version{{Name: "v1alpha1"}}}}},
			opts: Options{WebhookFiles: true},
			want: []string{
				"* '' events create,patch",
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"* apiextensions.k8s.io customresourcedefinitions patch [shops.shop.example]",
				"* shop.example shops get,list,watch",
				"* shop.example shops/finalizers update",
				"* shop.example shops/status patch",
			},
		},
		{
			name: "a set of several versions, no webhook: nothing of it",
			sets: []Set{{Config: config.Config{Parent: parent, Versions: []config.Version{{Name: "v1alpha1"}}}}},
			opts: Options{NoWebhook: true},
			want: []string{
				"* '' events create,patch",
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"* shop.example shops get,list,watch",
				"* shop.example shops/finalizers update",
				"* shop.example shops/status patch",
			},
		},
		{
			name: "a ServiceAccount writes the children: Loom reads them, impersonates it and reviews its lookups",
			sets: []Set{{Config: config.Config{Parent: parent, ServiceAccountName: "deployer",
				Lookups: []config.LookupRule{{APIVersion: "v1", Kind: "Secret"}}}, Children: []Kind{cm}}},
			want: []string{
				"* '' configmaps,secrets get,list,watch",
				"* '' events create,patch",
				"* '' serviceaccounts impersonate [deployer]",
				"* '' serviceaccounts list,watch",
				"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
				"* authorization.k8s.io subjectaccessreviews create",
				"* shop.example shops get,list,watch",
				"* shop.example shops/finalizers update",
				"* shop.example shops/status patch",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lines(Generate(tc.sets, tc.opts))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}
}

// ruleView is a rule in one line's words.
type ruleView struct{ group, resources, verbs string }

func view(rules []rbacPolicyRule) []ruleView {
	var out []ruleView
	for _, r := range rules {
		g := r.APIGroups[0]
		if g == "" {
			g = "''"
		}
		v := ruleView{group: g, resources: strings.Join(r.Resources, ","), verbs: strings.Join(r.Verbs, ",")}
		if len(r.ResourceNames) > 0 {
			v.verbs += " [" + strings.Join(r.ResourceNames, ",") + "]"
		}
		out = append(out, v)
	}
	return out
}

func TestWithout(t *testing.T) {
	p := Generate([]Set{{Config: config.Config{Parent: config.ParentRef{APIVersion: "a.example/v1", Kind: "A"}}}}, Options{Namespace: "x"})
	n := p.Count()
	seen := map[string]bool{}
	for i := range n {
		q := p.Without(i)
		if q.Count() != n-1 {
			t.Fatalf("Without(%d) has %d rules, want %d", i, q.Count(), n-1)
		}
		seen[strings.Join(lines(q), "\n")] = true
	}
	if len(seen) != n {
		t.Errorf("%d rules removed gave %d distinct policies", n, len(seen))
	}
}

type rbacPolicyRule = rbacv1.PolicyRule

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestChecks(t *testing.T) {
	p := Policy{
		Cluster: []rbacv1.PolicyRule{{APIGroups: []string{"x.example"}, Resources: []string{"ws", "ws/status"}, Verbs: []string{"get", "patch"}}},
		Namespaces: map[string][]rbacv1.PolicyRule{
			"b": {{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}}},
			"a": {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
		},
	}
	var got []string
	for _, c := range p.Checks() {
		got = append(got, c.String())
	}
	want := []string{
		"get ws.x.example in every namespace", "patch ws.x.example in every namespace",
		"get ws/status.x.example in every namespace", "patch ws/status.x.example in every namespace",
		"get secrets in namespace a", "create events in namespace b",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}
}
