package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// TestRenderOutputIsApplicable checks that every child loom render -o
// json|yaml prints has ownerReferences the API server accepts (what
// kubectl apply -f of the List sends): a parent with no metadata.uid gets
// no ownerReference, and a warning says so; a parent with one keeps it.
// On the old code -o json printed an ownerReference with no uid, which
// the API server refuses ("uid: Invalid value: \"\": uid must not be
// empty").
func TestRenderOutputIsApplicable(t *testing.T) {
	set := filepath.Join(repoRoot, "templates", "myresource")
	noUID := filepath.Join(repoRoot, "examples", "myresource.yaml")
	b, err := os.ReadFile(noUID)
	if err != nil {
		t.Fatal(err)
	}
	withUID := filepath.Join(t.TempDir(), "uid.yaml")
	if err := os.WriteFile(withUID, []byte(strings.Replace(string(b), "metadata:\n", "metadata:\n  uid: 0b5c3e52-8d3a-4c55-9f44-6a1f3b2b1e01\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, parent, format string
		wantOwners           bool
	}{
		{"json, no uid", noUID, "json", false},
		{"yaml, no uid", noUID, "yaml", false},
		{"json, a uid", withUID, "json", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := newRootCommand()
			var out, errOut strings.Builder
			root.SetArgs([]string{"render", "-t", set, "-f", tc.parent, "-o", tc.format})
			root.SetOut(&out)
			root.SetErr(&errOut)
			if err := root.Execute(); err != nil {
				t.Fatalf("render: %v\n%s", err, errOut.String())
			}
			var list unstructured.UnstructuredList
			raw := []byte(out.String())
			if tc.format == "yaml" {
				obj, err := yaml.YAMLToJSON(raw)
				if err != nil {
					t.Fatal(err)
				}
				raw = obj
			}
			if err := json.Unmarshal(raw, &list.Object); err != nil {
				t.Fatal(err)
			}
			items, _, _ := unstructured.NestedSlice(list.Object, "items")
			if len(items) == 0 {
				t.Fatal("no items")
			}
			for _, it := range items {
				child := unstructured.Unstructured{Object: it.(map[string]any)}
				owners := child.GetOwnerReferences()
				if errs := apivalidation.ValidateOwnerReferences(owners, field.NewPath("metadata", "ownerReferences")); len(errs) > 0 {
					t.Errorf("%s %s: the API server would refuse its ownerReferences: %v", child.GetKind(), child.GetName(), errs.ToAggregate())
				}
				if got := len(owners) > 0; got != tc.wantOwners {
					t.Errorf("%s %s: has ownerReferences = %v, want %v", child.GetKind(), child.GetName(), got, tc.wantOwners)
				}
			}
			warned := strings.Contains(errOut.String(), "has no metadata.uid")
			if warned == tc.wantOwners {
				t.Errorf("warning on stderr = %v, want %v; stderr:\n%s", warned, !tc.wantOwners, errOut.String())
			}
		})
	}
}
