package deploy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/loom-operator/loom/engine/rbac"
)

// TestChartLeaseRules checks the chart's Roles for Leases against what
// `loom rbac` generates for the same loom run flags: the leader-election
// Role against --leader-elect, the sharding Role against --sharded, both
// in the release namespace. The chart writes the verbs out; this test is
// what keeps them from drifting from what loom run does.
func TestChartLeaseRules(t *testing.T) {
	ns := testRelease.Namespace
	tests := []struct {
		name, values, role string
		opts               rbac.Options
	}{
		{"leader election", "{replicas: 2}", "loom-leader-election", rbac.Options{LeaseNamespace: ns}},
		{"sharding", "{replicas: 3, sharding: {enabled: true}}", "loom-sharding", rbac.Options{ShardNamespace: ns}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := rbac.Generate(nil, tt.opts).Namespaces[ns]
			if len(want) == 0 {
				t.Fatalf("loom rbac generates no rules in %s for %+v", ns, tt.opts)
			}
			r := render(t, loadChart(t, nil), readValues(t, tt.values))
			role, ok := r.objects["Role/"+tt.role].(*rbacv1.Role)
			if !ok {
				t.Fatalf("no Role %s rendered: %v", tt.role, r.kinds())
			}
			if diff := cmp.Diff(want, role.Rules); diff != "" {
				t.Errorf("Role %s is not what loom rbac generates (-loom rbac +chart):\n%s", tt.role, diff)
			}
		})
	}
}
