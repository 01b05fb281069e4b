package rbac

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/engine/render"
)

// loadSet loads a set from files in memory.
func loadSet(t *testing.T, files map[string]string) *render.Set {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, text := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	s, err := render.LoadFS(fsys, "grants")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const grantsConfig = "parent: {apiVersion: shop.example/v1, kind: Shop}\nclusterScoped:\n  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding}\n"

// grantsTemplates render a Role with literal rules (one in an if, one in
// a range), a RoleBinding of it, a RoleBinding of the ClusterRole view,
// and a ClusterRoleBinding of the ClusterRole loom-e2e-reader.
var grantsTemplates = map[string]string{
	"role.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .Name }}-reader
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list]
{{- if .Spec.pods }}
  - apiGroups: [""]
    resources: ["pods", "pods/log"]
    verbs: ["get"]
{{- end }}
  - apiGroups: [apps]
    resources: [deployments]
    resourceNames: [web]
    verbs: [get]
`,
	"binding.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .Name }}-reader
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: reader
subjects: [{kind: ServiceAccount, name: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .Name }}-view
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: default}]
`,
	"crb.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .Namespace }}-{{ .Name }}
roleRef:
  apiGroup: "rbac.authorization.k8s.io"
  kind: "ClusterRole"
  name: "loom-e2e-reader" # a comment
subjects: [{kind: ServiceAccount, name: default, namespace: {{ .Namespace }}}]
`,
}

// Loom holds no escalate: it holds the rules the set's Roles write (the
// API server lets it write a role only then), and bind only on the roles
// the bindings name literally.
func TestGenerateRBACChildrenGrants(t *testing.T) {
	files := map[string]string{"loom.yaml": grantsConfig}
	for k, v := range grantsTemplates {
		files[k] = v
	}
	rs, err := FromSet(loadSet(t, files))
	if err != nil {
		t.Fatal(err)
	}
	got := lines(Generate([]Set{rs}, Options{Namespace: "shop"}))
	want := []string{
		"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
		"* rbac.authorization.k8s.io clusterrolebindings get,list,watch,create,patch,delete",
		"* rbac.authorization.k8s.io clusterroles bind [loom-e2e-reader]",
		"default '' events create,patch",
		"shop '' configmaps get,list",
		"shop '' events create,patch",
		"shop '' pods,pods/log get",
		"shop apps deployments get [web]",
		"shop rbac.authorization.k8s.io clusterroles bind [view]",
		"shop rbac.authorization.k8s.io rolebindings,roles get,list,watch,create,patch,delete",
		"shop rbac.authorization.k8s.io roles bind [reader]",
		"shop shop.example shops get,list,watch,patch",
		"shop shop.example shops/finalizers update",
		"shop shop.example shops/status patch",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("policy (-want +got):\n%s", diff)
	}
}

// A roleRef that a template computes is refused, at its line, unless
// loom.yaml lists the roles the set may bind (bindRoles) or the set
// renders roles of that kind itself; the listed roles are what Loom may
// bind.
func TestGenerateComputedRoleRef(t *testing.T) {
	binding := `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .Name }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ .Spec.role }}
subjects: [{kind: ServiceAccount, name: default, namespace: {{ .Namespace }}}]
`
	t.Run("refused", func(t *testing.T) {
		_, err := FromSet(loadSet(t, map[string]string{"loom.yaml": grantsConfig, "crb.yaml": binding}))
		var ce *ComputedError
		if !errors.As(err, &ce) {
			t.Fatalf("FromSet = %v, want a *ComputedError", err)
		}
		if ce.File != "crb.yaml" || ce.Line != 8 || ce.Field != "roleRef.name" {
			t.Errorf("refused at %s:%d %s, want crb.yaml:8 roleRef.name", ce.File, ce.Line, ce.Field)
		}
	})
	t.Run("listed", func(t *testing.T) {
		rs, err := FromSet(loadSet(t, map[string]string{"loom.yaml": grantsConfig + "bindRoles:\n  - {kind: ClusterRole, name: view}\n  - {kind: ClusterRole, name: edit}\n", "crb.yaml": binding}))
		if err != nil {
			t.Fatal(err)
		}
		got := lines(Generate([]Set{rs}, Options{}))
		want := []string{
			"* '' events create,patch",
			"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
			"* rbac.authorization.k8s.io clusterrolebindings get,list,watch,create,patch,delete",
			"* rbac.authorization.k8s.io clusterroles bind [edit]",
			"* rbac.authorization.k8s.io clusterroles bind [view]",
			"* shop.example shops get,list,watch,patch",
			"* shop.example shops/finalizers update",
			"* shop.example shops/status patch",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("policy (-want +got):\n%s", diff)
		}
	})
	t.Run("a role the set renders", func(t *testing.T) {
		role := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Spec.role }}\nrules:\n  - {apiGroups: [\"\"], resources: [secrets], verbs: [get]}\n"
		rs, err := FromSet(loadSet(t, map[string]string{"loom.yaml": grantsConfig + "  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}\n", "crb.yaml": binding, "role.yaml": role}))
		if err != nil {
			t.Fatal(err)
		}
		got := lines(Generate([]Set{rs}, Options{}))
		want := []string{
			"* '' events create,patch",
			"* '' secrets get",
			"* apiextensions.k8s.io customresourcedefinitions get,list,watch",
			"* rbac.authorization.k8s.io clusterrolebindings,clusterroles get,list,watch,create,patch,delete",
			"* shop.example shops get,list,watch,patch",
			"* shop.example shops/finalizers update",
			"* shop.example shops/status patch",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("policy (-want +got):\n%s", diff)
		}
	})
}
