package rbac

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Check is one permission of a Policy: a verb on a resource (and
// subresource) of a group, in a namespace or, when Namespace is empty, in
// all of them.
type Check struct {
	Namespace, Verb, Group, Resource, Subresource string
	// Name, when set, is the one object the permission is for.
	Name string
}

// String names the permission as RBAC would: "patch
// myresources/status.example.loom.dev in namespace shop".
func (c Check) String() string {
	res := c.Resource
	if c.Subresource != "" {
		res += "/" + c.Subresource
	}
	if c.Group != "" {
		res += "." + c.Group
	}
	if c.Name != "" {
		res += " " + c.Name
	}
	where := "in every namespace"
	if c.Namespace != "" {
		where = "in namespace " + c.Namespace
	}
	return fmt.Sprintf("%s %s %s", c.Verb, res, where)
}

// Checks expands p into one Check per verb and resource, in a stable
// order: what Loom asks the API server about itself.
func (p Policy) Checks() []Check {
	var out []Check
	add := func(ns string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					name, sub, _ := strings.Cut(res, "/")
					names := r.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, v := range r.Verbs {
						for _, obj := range names {
							out = append(out, Check{Namespace: ns, Verb: v, Group: g, Resource: name, Subresource: sub, Name: obj})
						}
					}
				}
			}
		}
	}
	add("", p.Cluster)
	for _, ns := range p.namespaces() {
		add(ns, p.Namespaces[ns])
	}
	return out
}
