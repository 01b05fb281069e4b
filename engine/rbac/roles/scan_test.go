package roles

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       Found
	}{
		{
			name: "literal rules of every branch; a computed line is left out; computed resourceNames cover every name",
			text: `{{- if .Spec.on }}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Name }}
rules:
- apiGroups: [""]
  resources: [secrets]
  resourceNames: [{{ .Name }}]
  verbs: [get]
  {{- range .Spec.x }}
- nonResourceURLs: ["/metrics"]
  verbs: ["*"]
  {{- end }}
{{- with .Spec.rules }}
{{ toYaml . | indent 2 }}
{{- end }}
aggregationRule: {}
{{- end }}
`,
			want: Found{Roles: []Role{{Kind: "ClusterRole", File: "f.yaml", Line: 3,
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
					{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"*"}},
				},
				Computed: []int{16}}}},
		},
		{
			name: "rules a template writes whole",
			text: "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nrules: {{ toYaml .Spec.rules | nindent 2 }}\n",
			want: Found{Roles: []Role{{Kind: "Role", File: "f.yaml", Line: 2, Computed: []int{3}}}},
		},
		{
			name: "a Role of another group is not RBAC's",
			text: "apiVersion: iam.example/v1\nkind: Role\nrules:\n- verbs: [get]\n",
		},
		{
			name: "roleRefs: block, flow, quoted, two branches, computed",
			text: `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
{{- if .Spec.admin }}
  name: "admin" # the namespace's
{{- else }}
  name: reader
{{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: 'view'}
---
kind: ClusterRoleBinding
apiVersion: rbac.authorization.k8s.io/v1
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {{ include "x" . }}}
---
kind: RoleBinding
roleRef:
  kind: {{ .Spec.kind }}
  name: x
---
kind: RoleBinding
roleRef:
{{ toYaml .Spec.roleRef | indent 2 }}
`,
			want: Found{Refs: []Ref{
				{Binding: "RoleBinding", Kind: "Role", Name: "admin", File: "f.yaml", Line: 7},
				{Binding: "RoleBinding", Kind: "Role", Name: "reader", File: "f.yaml", Line: 9},
				{Binding: "ClusterRoleBinding", Kind: "ClusterRole", Name: "view", File: "f.yaml", Line: 14},
				{Binding: "ClusterRoleBinding", File: "f.yaml", Line: 18, Field: "roleRef.name", Value: `{{ include "x" . }}`},
				{Binding: "RoleBinding", File: "f.yaml", Line: 22, Field: "roleRef.kind", Value: "{{ .Spec.kind }}"},
				{Binding: "RoleBinding", File: "f.yaml", Line: 27, Field: "roleRef", Value: "{{ toYaml .Spec.roleRef | indent 2 }}"},
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Scan(map[string][]byte{"f.yaml": []byte(tc.text)})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Scan (-want +got):\n%s", diff)
			}
		})
	}
}
