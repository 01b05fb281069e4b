package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestValidationThroughRender checks that validation failures come back
// from Render located at the offending line.
func TestValidationThroughRender(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{
			name:  "missing name",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {}\n"},
			want:  "a.yaml:1 (document 1) ConfigMap: metadata.name: required (generateName is not supported: Loom must know each child's name)",
		},
		{
			name:  "invalid name at its line",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  labels: {}\n  name: 1{{ .Name }}\n"},
			want:  `a.yaml:5 (document 1) Service 1web: metadata.name: invalid name "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
		},
		{
			name:  "missing kind",
			files: map[string]string{"a.yaml": configMap("a", "  k: v\n") + "---\napiVersion: v1\nmetadata:\n  name: b\n"},
			want:  "a.yaml:8 (document 2) b: kind: required",
		},
		{
			name:  "bool in ConfigMap data at the data line",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  enabled: {{ .Spec.enabled }}\n"},
			want:  "a.yaml:5 (document 1) ConfigMap cm: data: must be string, not bool",
		},
		{
			name: "duplicate across two files",
			files: map[string]string{
				"a.yaml": configMap("cm", "  k: v\n"),
				"b.yaml": "# comment\n---\n" + configMap("other", "  k: v\n") + "---\n" + configMap("cm", "  k: w\n"),
			},
			want: `b.yaml:10 (document 3) ConfigMap cm: ConfigMap "cm" is also rendered by a.yaml:1 (document 1); child names must be unique per kind`,
		},
		{
			name:  "duplicate within one file",
			files: map[string]string{"a.yaml": configMap("cm", "  k: v\n") + "---\n" + configMap("cm", "  k: w\n")},
			want:  `a.yaml:8 (document 2) ConfigMap cm: ConfigMap "cm" is also rendered by a.yaml:1 (document 1); child names must be unique per kind`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, tt.files)
			got := renderErr(t, s, app(t, "  enabled: true\n"))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSameNameOtherKind checks that names need only be unique per kind.
func TestSameNameOtherKind(t *testing.T) {
	s := loadSet(t, map[string]string{
		"a.yaml": configMap("web", "  k: v\n"),
		"b.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n",
		"c.yaml": "apiVersion: example.com/v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
	})
	var got []string
	for _, c := range mustRender(t, s, app(t, "")) {
		got = append(got, c.GetAPIVersion()+" "+c.GetKind()+" "+c.GetName())
	}
	want := []string{"v1 ConfigMap web", "example.com/v1 ConfigMap web", "v1 Service web"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children mismatch (-want +got):\n%s", diff)
	}
}

// A set whose parent is a built-in kind (a ConfigMap: no generation, no
// CRD) loads, renders and has no CRD: the load-time CRD check applies
// only to parents that are custom resources.
func TestBuiltinParentKindLoads(t *testing.T) {
	s := loadSet(t, map[string]string{
		"loom.yaml": "parent:\n  apiVersion: v1\n  kind: ConfigMap\n",
		"sa.yaml":   "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Name }}-sa\n",
	})
	parent := fixture(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\n  uid: uid-1\ndata:\n  color: blue\n")
	out, err := s.Render(parent)
	if err != nil || len(out) != 1 {
		t.Fatalf("render: %v (%d children)", err, len(out))
	}
	if _, err := s.CRD(); err == nil {
		t.Error("CRD() of a built-in parent kind: want an error, as loom crd gives")
	}
}
