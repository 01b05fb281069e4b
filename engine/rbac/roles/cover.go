package roles

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Uncovered returns the first permission of rule that no rule of owners
// grants ("get secrets", "list deployments.apps"), or "" when they grant
// it all, with RBAC's wildcards.
func Uncovered(owners []rbacv1.PolicyRule, rule rbacv1.PolicyRule) string {
	has := func(list []string, v string) bool {
		return slices.Contains(list, v) || slices.Contains(list, rbacv1.VerbAll)
	}
	for _, v := range rule.Verbs {
		for _, url := range rule.NonResourceURLs {
			if !slices.ContainsFunc(owners, func(o rbacv1.PolicyRule) bool { return has(o.Verbs, v) && urlMatches(o.NonResourceURLs, url) }) {
				return v + " " + url
			}
		}
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				names := rule.ResourceNames
				if len(names) == 0 {
					names = []string{""}
				}
				for _, n := range names {
					if !slices.ContainsFunc(owners, func(o rbacv1.PolicyRule) bool {
						return has(o.Verbs, v) && has(o.APIGroups, g) && resourceMatches(o.Resources, res) &&
							(len(o.ResourceNames) == 0 || n != "" && slices.Contains(o.ResourceNames, n))
					}) {
						what := res
						if g != "" {
							what += "." + g
						}
						if n != "" {
							what += " " + n
						}
						return v + " " + what
					}
				}
			}
		}
	}
	return ""
}

// resourceMatches reports whether list grants res as RBAC matches it: the
// resource itself, *, or */subresource.
func resourceMatches(list []string, res string) bool {
	if slices.Contains(list, res) || slices.Contains(list, rbacv1.ResourceAll) {
		return true
	}
	if _, sub, ok := strings.Cut(res, "/"); ok {
		return slices.Contains(list, "*/"+sub)
	}
	return false
}

// urlMatches reports whether list grants url: itself, or a prefix of it
// ending in *.
func urlMatches(list []string, url string) bool {
	for _, u := range list {
		if u == url || u == rbacv1.NonResourceAll || strings.HasSuffix(u, "*") && strings.HasPrefix(url, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}
