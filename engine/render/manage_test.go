package render

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
)

// observeConfig is a loom.yaml that declares ConfigMaps as lookups, in
// the parent's namespace and in shared.
const observeConfig = testConfig + `lookups:
- apiVersion: v1
  kind: ConfigMap
  namespaces: [shared]
`

// TestManageIsChecked: a loom.dev/manage that is not a mode fails, at
// load when it is literal in the template, at render (file:line, with a
// suggestion) when a template action computes it; an observed child
// whose template sets fields is refused the same way.
func TestManageIsChecked(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		load   string // the load error's text, "" if it loads
		render string // the render error's text
	}{
		{
			name:  "a literal typo is a load error",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    loom.dev/manage: craete-only\n"},
			load:  `a.yaml:6: loom.dev/manage is "craete-only"; it must be one of full, create-only, observe, patch (did you mean "create-only"?)`,
		},
		{
			name:   "a computed typo is a render error",
			files:  map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    loom.dev/manage: {{ \"obsreve\" }}\n"},
			render: `a.yaml:1 (document 1) ConfigMap cm: loom.dev/manage is "obsreve"; it must be one of full, create-only, observe, patch (did you mean "observe"?)`,
		},
		{
			name:  "an observed child with data is a load error",
			files: map[string]string{config_: observeConfig, "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    loom.dev/manage: observe\ndata:\n  a: b\n"},
			load:  `a.yaml:7: loom.dev/manage is observe, so Loom never writes this child: its template may set apiVersion, kind, metadata.name, metadata.namespace and loom.dev/ annotations only, not data`,
		},
		{
			name:  "an observed child with labels is a load error",
			files: map[string]string{config_: observeConfig, "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels:\n    a: b\n  annotations:\n    loom.dev/manage: observe\n"},
			load:  `a.yaml:5: loom.dev/manage is observe, so Loom never writes this child: its template may set apiVersion, kind, metadata.name, metadata.namespace and loom.dev/ annotations only, not metadata.labels`,
		},
		{
			name:   "an observed child with computed fields is a render error",
			files:  map[string]string{config_: observeConfig, "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    loom.dev/manage: observe\n{{ \"data: {a: b}\" }}\n"},
			render: `a.yaml:1 (document 1) ConfigMap cm: loom.dev/manage is observe, so Loom never writes this child: its template may set apiVersion, kind, metadata.name, metadata.namespace and loom.dev/ annotations only, not data`,
		},
		{
			name:   "an observed child of an undeclared kind",
			files:  map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    loom.dev/manage: observe\n"},
			render: `a.yaml:1 (document 1) ConfigMap cm: loom.dev/manage is observe: Loom reads this child as a lookup, so loom.yaml's lookups must declare v1 ConfigMap`,
		},
		{
			name:   "an observed child in a namespace not declared",
			files:  map[string]string{config_: observeConfig, "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: other\n  annotations:\n    loom.dev/manage: observe\n"},
			render: `a.yaml:1 (document 1) ConfigMap cm: loom.dev/manage is observe: namespace "other" is neither the parent's ("default") nor declared for ConfigMap in loom.yaml lookups`,
		},
		{
			name:  "the set's default is checked with loom.yaml",
			files: map[string]string{config_: testConfig + "manage: observ\n", "a.yaml": configMap("cm", "  a: b\n")},
			load:  `manage is "observ"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadFS(fsOf(tt.files), "testset")
			if tt.load != "" {
				if err == nil {
					t.Fatalf("LoadFS succeeded, want %q", tt.load)
				}
				wantContains(t, err.Error(), tt.load)
				return
			}
			if err != nil {
				t.Fatalf("LoadFS: %v", err)
			}
			wantContains(t, renderErr(t, s, app(t, "")), tt.render)
		})
	}
}

// config_ is loom.yaml's name, short for the table above.
const config_ = "loom.yaml"

// TestManagedChildren: what each mode leaves on a rendered child. A
// create-only child is Loom's (ownerReference, labels) and says its mode;
// an observed child is not: it only names the object, in the parent's
// namespace or a declared one; a full child carries no mode annotation,
// so its hash is as before.
func TestManagedChildren(t *testing.T) {
	files := map[string]string{
		config_: observeConfig,
		"a.yaml": configMap("full", "  a: b\n") + "---\n" +
			"apiVersion: v1\nkind: Secret\nmetadata:\n  name: once\n  annotations:\n    loom.dev/manage: create-only\nstringData:\n  p: x\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seen\n  namespace: shared\n  annotations:\n    loom.dev/manage: observe\n",
	}
	kids := mustRender(t, loadSet(t, files), app(t, ""))
	got := map[string]string{}
	for _, k := range kids {
		got[k.GetName()] = k.GetAnnotations()[object.AnnotationManage] + "|" + k.GetNamespace() + "|" +
			k.GetLabels()[object.LabelManagedBy] + "|" + boolText(len(k.GetOwnerReferences()) > 0)
	}
	want := map[string]string{
		"full": "|default|loom|owned",
		"once": "create-only|default|loom|owned",
		"seen": "observe|shared||",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("children (-want +got):\n%s", d)
	}

	// The set's default applies to children without the annotation, and
	// the rendered child says so.
	files[config_] = observeConfig + "manage: create-only\n"
	files["a.yaml"] = configMap("cm", "  a: b\n")
	kids = mustRender(t, loadSet(t, files), app(t, ""))
	if m := object.ManageOf(kids[0].GetAnnotations(), ""); m != object.ManageCreateOnly {
		t.Errorf("mode of a child of a create-only set = %q, want create-only", m)
	}
}

func boolText(b bool) string {
	if b {
		return "owned"
	}
	return ""
}

var _ = errors.Is
