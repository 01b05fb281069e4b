package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/loom-operator/loom/engine/config"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const tenantChartSet = "testdata/chartsets/tenant"

// sharedToken is a Secret of a namespace the tenant set declares for
// its own lookups.
const sharedToken = `apiVersion: v1
kind: Secret
metadata: {name: token, namespace: shared}
data: {k: c2VjcmV0}
`

// tenantReader holds sharedToken.
func tenantReader(t *testing.T) *ObjectsReader {
	t.Helper()
	return NewObjectsReader([]*unstructured.Unstructured{fixture(t, sharedToken)})
}

// withConfig loads the set at dir with extra lines appended to its
// loom.yaml.
func withConfig(t *testing.T, dir, extra string) *Set {
	t.Helper()
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if extra == "" {
		return s
	}
	files := s.Sources()
	files[config.File] = append(files[config.File], []byte(extra)...)
	if s, err = LoadSources(dir, files); err != nil {
		t.Fatal(err)
	}
	return s
}

func site(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1", "kind": "Site",
		"metadata": map[string]any{"name": "blog", "namespace": "team-a", "uid": "u-blog", "generation": int64(1)},
		"spec":     spec,
	}}
}

// TestSpecTextCannotLookUp renders a chart that passes values to tpl (as
// Bitnami's common.tplvalues.render does) and looks up a declared Secret
// of another namespace itself: the chart's own lookup reads it, text the
// parent's author wrote may not, unless loom.yaml's specLookups says so.
// The same holds for a set of Loom templates that runs tpl on .Spec.
func TestSpecTextCannotLookUp(t *testing.T) {
	steal := `{{ (lookup "v1" "Secret" "shared" "token").data | toJson }}`
	plain := map[string]string{
		config.File: testConfig + "lookups:\n  - apiVersion: v1\n    kind: Secret\n    namespaces: [shared]\n",
		"cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: out\ndata:\n  got: {{ tpl .Spec.text . | quote }}\n  own: {{ tpl \"{{ (lookup \\\"v1\\\" \\\"Secret\\\" \\\"shared\\\" \\\"token\\\").data.k }}\" . | quote }}\n",
	}
	tests := []struct {
		name   string
		set    func(t *testing.T, optIn bool) *Set
		parent *unstructured.Unstructured
		// got reads what the lookup returned from the children.
		got func(t *testing.T, out *Output) string
	}{
		{
			name: "chart, annotations through tpl",
			set: func(t *testing.T, optIn bool) *Set {
				if optIn {
					return withConfig(t, tenantChartSet, "specLookups: true\n")
				}
				return withConfig(t, tenantChartSet, "")
			},
			parent: site(map[string]any{"annotations": map[string]any{"stolen": steal}}),
			got: func(t *testing.T, out *Output) string {
				return out.Children[0].GetAnnotations()["stolen"]
			},
		},
		{
			name: "chart, a define that looks up, included from the spec",
			set: func(t *testing.T, optIn bool) *Set {
				if optIn {
					return withConfig(t, tenantChartSet, "specLookups: true\n")
				}
				return withConfig(t, tenantChartSet, "")
			},
			parent: site(map[string]any{"banner": `{{ include "site.sharedToken" . }}`}),
			got: func(t *testing.T, out *Output) string {
				return dataOf(t, out.Children, "blog-site", "banner")
			},
		},
		{
			name: "set of Loom templates, tpl of .Spec",
			set: func(t *testing.T, optIn bool) *Set {
				files := map[string]string{}
				for k, v := range plain {
					files[k] = v
				}
				if optIn {
					files[config.File] += "specLookups: true\n"
				}
				return loadSet(t, files)
			},
			parent: app(t, "  text: '"+steal+"'\n"),
			got: func(t *testing.T, out *Output) string {
				return dataOf(t, out.Children, "out", "got")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.set(t, false).RenderWith(tt.parent, tenantReader(t))
			if !errors.Is(err, ErrLookupRefused) || !strings.Contains(err.Error(), "specLookups") {
				t.Fatalf("without specLookups: err = %v, want %v naming specLookups", err, ErrLookupRefused)
			}
			out, err := tt.set(t, true).RenderWith(tt.parent, tenantReader(t))
			if err != nil {
				t.Fatalf("with specLookups: %v", err)
			}
			if got := tt.got(t, out); !strings.Contains(got, "c2VjcmV0") {
				t.Errorf("with specLookups: the lookup gave %q, want the Secret's data", got)
			}
		})
	}
}

// TestChartOwnLookupStillReads renders the tenant chart with its
// defaults: its own lookup, and tpl of its own values.yaml text, work
// without specLookups.
func TestChartOwnLookupStillReads(t *testing.T) {
	out, err := withConfig(t, tenantChartSet, "").RenderWith(site(map[string]any{}), tenantReader(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := dataOf(t, out.Children, "blog-site", "token"); got != `{"k":"c2VjcmV0"}` {
		t.Errorf("token = %q, want the Secret's data", got)
	}
	if got := dataOf(t, out.Children, "blog-site", "banner"); got != "blog in team-a" {
		t.Errorf("banner = %q", got)
	}
}

// TestSpecCannotChooseKinds renders children whose whole text comes from
// the parent's spec (a chart's extraDeploy-style list through tpl, a
// set's toYaml of .Spec): a kind that a template names is rendered, any
// other is refused at the template that wrote it.
func TestSpecCannotChooseKinds(t *testing.T) {
	binding := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "root"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": "team-a"}},
	}
	configMap := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "extra"}}
	plain := loadSet(t, map[string]string{
		"cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: out\n",
		"extra.yaml": "{{ range .Spec.extra }}\n---\n{{ toYaml . }}\n{{ end }}\n",
	})
	tests := []struct {
		name   string
		set    *Set
		parent *unstructured.Unstructured
		// where is the file the error must name; "" for no error.
		where string
	}{
		{name: "chart, a declared kind", set: withConfig(t, tenantChartSet, ""),
			parent: site(map[string]any{"extra": []any{configMap}})},
		{name: "chart, an undeclared kind", set: withConfig(t, tenantChartSet, ""),
			parent: site(map[string]any{"extra": []any{configMap, binding}}), where: "chart/templates/extra.yaml"},
		{name: "chart, an undeclared kind as tpl text", set: withConfig(t, tenantChartSet, ""),
			parent: site(map[string]any{"extra": []any{"apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n"}}), where: "chart/templates/extra.yaml"},
		{name: "set, a declared kind", set: plain,
			parent: app(t, "  extra: [{apiVersion: v1, kind: ConfigMap, metadata: {name: extra}}]\n")},
		{name: "set, an undeclared kind", set: plain,
			parent: app(t, "  extra: [{apiVersion: v1, kind: Secret, metadata: {name: extra}}]\n"), where: "extra.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.set.RenderWith(tt.parent, nil)
			if tt.where == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := names(out.Children); !strings.Contains(strings.Join(got, " "), "extra") {
					t.Errorf("children %v lack the spec's ConfigMap extra", got)
				}
				return
			}
			var re *Error
			if !errors.Is(err, ErrUndeclaredKind) || !errors.As(err, &re) || re.File != tt.where {
				t.Fatalf("err = %v, want %v at %s", err, ErrUndeclaredKind, tt.where)
			}
		})
	}
}
