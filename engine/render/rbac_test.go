package render

import (
	"strings"
	"testing"
)

// rbacConfig declares the cluster-scoped RBAC kinds and lists view as a
// role the set may bind.
const rbacConfig = testConfig + `clusterScoped:
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding}
bindRoles:
  - {kind: ClusterRole, name: view}
`

// rbacTemplates render a RoleBinding whose roleRef the spec names, a
// ClusterRole with literal rules (and the spec's extra rules), and a
// binding of the role the set renders.
var rbacTemplates = map[string]string{
	"loom.yaml": rbacConfig,
	"binding.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .Name }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ .Spec.role }}
subjects: [{kind: ServiceAccount, name: default}]
`,
	"own.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Namespace }}-{{ .Name }}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list]
{{- with .Spec.rules }}
{{ toYaml . | indent 2 }}
{{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .Namespace }}-{{ .Name }}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {{ .Namespace }}-{{ .Name }}}
subjects: [{kind: ServiceAccount, name: default, namespace: {{ .Namespace }}}]
`,
}

// A rendered binding may refer to a role the set lists in bindRoles or
// names literally, or to a role the same render writes; any other roleRef
// (cluster-admin from the spec) is an error at the roleRef's line. A
// rendered role may hold only rules the set's templates write literally.
func TestRenderRBACFromSpec(t *testing.T) {
	s := loadSet(t, rbacTemplates)
	for _, tc := range []struct {
		name, spec string
		want       string // error text, or "" for success
	}{
		{name: "a listed role", spec: "  role: view\n"},
		{name: "cluster-admin from the spec", spec: "  role: cluster-admin\n",
			want: `binding.yaml:8 RoleBinding web: roleRef ClusterRole "cluster-admin" is not a role this set may bind`},
		{name: "a role the render writes", spec: "  role: default-web\n"},
		{name: "a rule from the spec within the literal ones", spec: "  role: view\n  rules: [{apiGroups: [\"\"], resources: [configmaps], resourceNames: [a], verbs: [get]}]\n"},
		{name: "a rule from the spec beyond them", spec: "  role: view\n  rules: [{apiGroups: [\"\"], resources: [secrets], verbs: [get]}]\n",
			want: `own.yaml:5 ClusterRole default-web: rules[1]: get secrets is not among the rules the set's templates write literally`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Render(app(t, tc.spec))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Render: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("Render succeeded, want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Render error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}
