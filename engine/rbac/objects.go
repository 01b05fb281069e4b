package rbac

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Objects returns the objects that grant p to the ServiceAccount sa: a
// ClusterRole and ClusterRoleBinding named name for the cluster-wide
// rules, and a Role and RoleBinding named name in each namespace that has
// rules of its own, in a stable order.
func (p Policy) Objects(name string, sa types.NamespacedName) []runtime.Object {
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}
	labels := map[string]string{"app.kubernetes.io/name": "loom", "app.kubernetes.io/component": "rbac"}
	var out []runtime.Object
	if len(p.Cluster) > 0 {
		out = append(out,
			&rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
				Rules:      p.Cluster,
			},
			&rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   subject,
			})
	}
	for _, ns := range p.namespaces() {
		if len(p.Namespaces[ns]) == 0 {
			continue
		}
		out = append(out,
			&rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
				Rules:      p.Namespaces[ns],
			},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   subject,
			})
	}
	return out
}

// Without returns p without its i-th rule, counting the cluster-wide
// rules first and then each namespace's in name order; Count is how many
// there are. Tests use it to remove one rule at a time.
func (p Policy) Without(i int) Policy {
	out := Policy{Namespaces: map[string][]rbacv1.PolicyRule{}}
	for j, r := range p.Cluster {
		if j != i {
			out.Cluster = append(out.Cluster, r)
		}
	}
	i -= len(p.Cluster)
	for _, ns := range p.namespaces() {
		for j, r := range p.Namespaces[ns] {
			if j != i {
				out.Namespaces[ns] = append(out.Namespaces[ns], r)
			}
		}
		i -= len(p.Namespaces[ns])
	}
	return out
}

// namespaces returns the namespaces that p has Roles for, sorted.
func (p Policy) namespaces() []string {
	out := make([]string, 0, len(p.Namespaces))
	for ns := range p.Namespaces {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// Count is the number of rules in p.
func (p Policy) Count() int {
	n := len(p.Cluster)
	for _, rules := range p.Namespaces {
		n += len(rules)
	}
	return n
}
