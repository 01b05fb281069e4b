package roles

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestUncovered(t *testing.T) {
	rule := func(verbs, groups, resources, names, urls []string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names, NonResourceURLs: urls}
	}
	s := func(v ...string) []string { return v }
	tests := []struct {
		name   string
		owners []rbacv1.PolicyRule
		rule   rbacv1.PolicyRule
		want   string
	}{
		{"granted", []rbacv1.PolicyRule{rule(s("get", "list"), s(""), s("secrets"), nil, nil)}, rule(s("get"), s(""), s("secrets"), nil, nil), ""},
		{"a verb missing", []rbacv1.PolicyRule{rule(s("get"), s(""), s("secrets"), nil, nil)}, rule(s("get", "list"), s(""), s("secrets"), nil, nil), "list secrets"},
		{"another group", []rbacv1.PolicyRule{rule(s("get"), s(""), s("deployments"), nil, nil)}, rule(s("get"), s("apps"), s("deployments"), nil, nil), "get deployments.apps"},
		{"wildcards", []rbacv1.PolicyRule{rule(s("*"), s("*"), s("*"), nil, nil)}, rule(s("delete"), s("apps"), s("deployments"), nil, nil), ""},
		{"a subresource by */sub", []rbacv1.PolicyRule{rule(s("get"), s(""), s("*/status"), nil, nil)}, rule(s("get"), s(""), s("pods/status"), nil, nil), ""},
		{"names narrow the owner", []rbacv1.PolicyRule{rule(s("get"), s(""), s("secrets"), s("a"), nil)}, rule(s("get"), s(""), s("secrets"), nil, nil), "get secrets"},
		{"a named one granted", []rbacv1.PolicyRule{rule(s("get"), s(""), s("secrets"), s("a"), nil)}, rule(s("get"), s(""), s("secrets"), s("a"), nil), ""},
		{"a URL by prefix", []rbacv1.PolicyRule{rule(s("get"), nil, nil, nil, s("/healthz/*"))}, rule(s("get"), nil, nil, nil, s("/healthz/ping")), ""},
		{"a URL missing", []rbacv1.PolicyRule{rule(s("get"), nil, nil, nil, s("/healthz"))}, rule(s("get"), nil, nil, nil, s("/metrics")), "get /metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Uncovered(tt.owners, tt.rule); got != tt.want {
				t.Errorf("Uncovered = %q, want %q", got, tt.want)
			}
		})
	}
}
