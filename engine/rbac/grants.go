package rbac

import (
	"slices"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/config"
)

// grantsRBAC adds what the API server wants of whoever writes the RBAC
// objects of s, with ns the watched namespace or "".
//
// A role: Loom holds every rule the role holds (the API server's
// escalation check), so Loom is granted the rules the set's roles write
// literally, where it writes them; never escalate, which would let a role
// computed from a parent's spec hold anything. A binding: Loom holds bind,
// by name, on the roles the bindings name literally and on those
// loom.yaml's bindRoles lists. A binding of a role the set writes under a
// computed name needs no bind: Loom holds that role's rules. Render refuses a rendered
// binding of any other role, and a rendered role with a rule the templates
// do not write literally (see render's checkRBAC).
func (s Set) grantsRBAC(n needs, ns string, clusterScoped map[schema.GroupKind]bool) {
	for _, r := range s.Roles.Roles {
		where := ns
		if r.Kind == "ClusterRole" {
			where = ""
		}
		for _, rule := range r.Rules {
			holdRule(n, where, rule)
		}
	}
	roleRes := func(kind string) schema.GroupResource {
		return Resource(schema.GroupKind{Group: rbacv1.GroupName, Kind: kind})
	}
	bindingNS := func(binding string) string {
		if binding == "ClusterRoleBinding" {
			return ""
		}
		return ns
	}
	for _, ref := range s.Roles.Refs {
		if ref.Computed() || ref.Kind != "Role" && ref.Kind != "ClusterRole" {
			continue
		}
		n.addNamed(bindingNS(ref.Binding), roleRes(ref.Kind), ref.Name, "bind")
	}
	for _, binding := range []string{"RoleBinding", "ClusterRoleBinding"} {
		if !s.renders(schema.GroupKind{Group: rbacv1.GroupName, Kind: binding}) {
			continue
		}
		for _, r := range s.Config.BindRoles {
			if binding == "ClusterRoleBinding" && r.Kind == "Role" {
				continue // a ClusterRoleBinding binds ClusterRoles only
			}
			n.addNamed(bindingNS(binding), roleRes(r.Kind), r.Name, "bind")
		}
	}
}

// renders reports whether the set renders children of gk.
func (s Set) renders(gk schema.GroupKind) bool {
	return slices.ContainsFunc(s.Children, func(k Kind) bool { return k.GroupKind == gk })
}

// holdRule adds the permissions of rule at where.
func holdRule(n needs, where string, rule rbacv1.PolicyRule) {
	for _, url := range rule.NonResourceURLs {
		k := scopeKey{url: url}
		if n[k] == nil {
			n[k] = map[string]bool{}
		}
		for _, v := range rule.Verbs {
			n[k][v] = true
		}
	}
	names := rule.ResourceNames
	if len(names) == 0 {
		names = []string{""}
	}
	for _, g := range rule.APIGroups {
		for _, res := range rule.Resources {
			for _, name := range names {
				n.addNamed(where, schema.GroupResource{Group: g, Resource: res}, name, rule.Verbs...)
			}
		}
	}
}

// checkRoleRefs refuses a roleRef that a template computes unless
// loom.yaml lists the roles the set may bind, or the set writes roles of
// the kind it names (a chart binding its own role, whose name depends on
// the release): otherwise no role could be bound but by a grant Loom
// does not have.
func (s Set) checkRoleRefs() error {
	if len(s.Config.BindRoles) > 0 {
		return nil
	}
	for _, ref := range s.Roles.Refs {
		if !ref.Computed() {
			continue
		}
		if ref.Kind != "" && s.Roles.HasRole(ref.Kind) || ref.Kind == "" && len(s.Roles.Roles) > 0 {
			continue
		}
		return &ComputedError{File: ref.File, Line: ref.Line, Field: ref.Field, Value: ref.Value,
			Hint: "make it literal, or list the roles the set may bind in " + config.File + "'s bindRoles, so that Loom may bind them and no others"}
	}
	return nil
}

// sortVerbs returns the verbs set in verbs: those RBAC documents in their
// order, then any other (a wildcard, a custom verb) by name.
func sortVerbs(verbs map[string]bool) []string {
	var out, other []string
	for _, v := range verbOrder {
		if verbs[v] {
			out = append(out, v)
		}
	}
	for v := range verbs {
		if verbs[v] && !slices.Contains(verbOrder, v) {
			other = append(other, v)
		}
	}
	sort.Strings(other)
	return append(out, other...)
}
