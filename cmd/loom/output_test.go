package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/render"
)

func TestPrintObjects(t *testing.T) {
	cm := fromYAML(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n")
	sa := fromYAML(t, "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: b\n")
	tests := []struct {
		name   string
		format string
		objs   []*unstructured.Unstructured
		want   string
	}{
		{name: "json, in the order given", format: "json", objs: []*unstructured.Unstructured{sa, cm}, want: `{
    "apiVersion": "v1",
    "items": [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": "b"
            }
        },
        {
            "apiVersion": "v1",
            "data": {
                "k": "v"
            },
            "kind": "ConfigMap",
            "metadata": {
                "name": "a"
            }
        }
    ],
    "kind": "List",
    "metadata": {}
}
`},
		{name: "yaml", format: "yaml", objs: []*unstructured.Unstructured{cm}, want: `apiVersion: v1
items:
- apiVersion: v1
  data:
    k: v
  kind: ConfigMap
  metadata:
    name: a
kind: List
metadata: {}
`},
		{name: "json, no objects: items is empty, not null", format: "json", want: `{
    "apiVersion": "v1",
    "items": [],
    "kind": "List",
    "metadata": {}
}
`},
		{name: "yaml, no objects", format: "yaml", want: "apiVersion: v1\nitems: []\nkind: List\nmetadata: {}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printObjects(&b, tt.format, tt.objs); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("printObjects (-want +got):\n%s", diff)
			}
		})
	}
	if err := printObjects(&bytes.Buffer{}, "", nil); err == nil {
		t.Error("printObjects with the default format: no error")
	}
}

// -o json and -o yaml print the same objects as the default output, as a
// List (loom render) or the object (loom crd), except for ownerReferences
// with no uid, which the List leaves out (TestRenderOutputIsApplicable);
// the default output is the golden files' format, unchanged; an unknown -o
// is a usage error.
func TestOutputFlag(t *testing.T) {
	set := filepath.Join(repoRoot, "templates", "myresource")
	full := filepath.Join(repoRoot, "examples", "myresource-full.yaml")
	stream, errOut, code := runLoom(t, "", "render", "-t", set, "-f", full)
	if code != 0 {
		t.Fatalf("loom render: exit %d\n%s", code, errOut)
	}
	children, err := render.ReadParents(strings.NewReader(stream)) // any YAML stream
	if err != nil {
		t.Fatal(err)
	}
	if len(children) < 2 {
		t.Fatalf("loom render printed %d objects, want several:\n%s", len(children), stream)
	}
	wantList := map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}, "items": []any{}}
	dropOwnersWithoutUID(children) // the example parent has no uid
	for _, c := range children {
		wantList["items"] = append(wantList["items"].([]any), c.Object)
	}
	wantList = decoded(t, wantList)
	crdText, errOut, code := runLoom(t, "", "crd", "-t", set)
	if code != 0 {
		t.Fatalf("loom crd: exit %d\n%s", code, errOut)
	}
	var wantCRD map[string]any
	if err := yaml.Unmarshal([]byte(crdText), &wantCRD); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		args     []string
		want     map[string]any // the document printed, decoded
		wantCode int
		wantErr  string
	}{
		{name: "render -o json", args: []string{"render", "-t", set, "-f", full, "-o", "json"}, want: wantList},
		{name: "render -o yaml", args: []string{"render", "-t", set, "-f", full, "--output", "yaml"}, want: wantList},
		{name: "crd -o json", args: []string{"crd", "-t", set, "-o", "json"}, want: wantCRD},
		{name: "crd -o yaml", args: []string{"crd", "-t", set, "-o=yaml"}, want: wantCRD},
		{name: "render -o wide", args: []string{"render", "-t", set, "-f", full, "-o", "wide"},
			wantCode: 1, wantErr: `invalid argument "wide" for "-o, --output" flag: unknown output format "wide": want one of json, yaml`},
		{name: "crd -o name", args: []string{"crd", "-t", set, "-o", "name"}, wantCode: 2, wantErr: `unknown output format "name"`},
		{name: "crd -o with --check", args: []string{"crd", "-t", set, "-o", "json", "--check"}, wantCode: 2, wantErr: "--output and --check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runLoom(t, "", tt.args...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d, want %d with %q on stderr:\n%s", code, tt.wantCode, tt.wantErr, errOut)
			}
			if tt.want == nil {
				if out != "" {
					t.Errorf("printed on stdout:\n%s", out)
				}
				return
			}
			var got map[string]any
			if err := yaml.Unmarshal([]byte(out), &got); err != nil { // JSON is YAML
				t.Fatalf("%v:\n%s", err, out)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("printed (-want +got):\n%s", diff)
			}
		})
	}
}

// decoded is v as yaml.Unmarshal decodes its JSON: numbers are float64.
func decoded(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// loom render -o names each child's mode that is not full (its
// loom.dev/manage, from the template or loom.yaml's manage), and nothing
// on a full child: the example set has one of each.
func TestRenderOutputShowsModes(t *testing.T) {
	set := filepath.Join(repoRoot, "examples", "modes", "site")
	tests := filepath.Join(set, "tests")
	for _, format := range []string{"json", "yaml"} {
		out, errOut, code := runLoom(t, "", "render", "-t", set, "-f", filepath.Join(tests, "site.yaml"),
			"--lookups", filepath.Join(tests, "site.lookups.yaml"), "-o", format)
		if code != 0 {
			t.Fatalf("loom render -o %s: exit %d\n%s", format, code, errOut)
		}
		var list struct {
			Items []struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name        string            `json:"name"`
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"items"`
		}
		if err := yaml.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, it := range list.Items {
			got[it.Kind+" "+it.Metadata.Name] = it.Metadata.Annotations["loom.dev/manage"]
		}
		want := map[string]string{"Secret shop-db": "create-only", "ConfigMap platform-settings": "observe", "ConfigMap shop-site": ""}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("-o %s: modes (-want +got):\n%s", format, d)
		}
	}
}
