package crd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/internal/admitcases"
)

// admitters builds one Admitter per kind of the shared table's CRDs.
func admitters(t *testing.T) map[string]*Admitter {
	t.Helper()
	crds, err := admitcases.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*Admitter{}
	for kind, crd := range crds {
		a, err := NewAdmitter(crd)
		if err != nil {
			t.Fatalf("NewAdmitter(%s): %v", crd.Name, err)
		}
		out[kind] = a
	}
	return out
}

// TestAdmitTable runs the table test/e2e runs against the real API server
// (admit_test.go there): the same accept or refuse, the same stored object,
// the same message.
func TestAdmitTable(t *testing.T) {
	if n := len(admitcases.Cases); n < 30 {
		t.Fatalf("the table has %d cases, want at least 30", n)
	}
	byKind := admitters(t)
	for _, tc := range admitcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			obj, err := admitcases.Decode(tc.Object)
			if err != nil {
				t.Fatal(err)
			}
			a := byKind[obj["kind"].(string)]
			got, warnings, err := a.AdmitWithWarnings(obj)
			if diff := cmp.Diff(tc.Warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if tc.Error != "" {
				if err == nil {
					t.Fatalf("Admit accepted it, want error %q", tc.Error)
				}
				if diff := cmp.Diff(tc.Error, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			want, err := admitcases.Decode(tc.Stored)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(admitcases.Stored(want), admitcases.Stored(got)); diff != "" {
				t.Errorf("stored object (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(obj["metadata"], got["metadata"]); diff != "" {
				t.Errorf("metadata changed (-given +got):\n%s", diff)
			}
		})
	}
}

// TestAdmitShippedParents checks that the committed MyResource CRD admits
// every shipped example and test parent, and that the ones that give no
// replicas get the CRD's default.
func TestAdmitShippedParents(t *testing.T) {
	raw, err := os.ReadFile("../../crds/myresources.example.loom.dev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	def := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, def); err != nil {
		t.Fatal(err)
	}
	a, err := NewAdmitter(def)
	if err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob("../../examples/*.yaml")
	tests, _ := filepath.Glob("../../templates/myresource/tests/*.yaml")
	n := 0
	for _, path := range append(examples, tests...) {
		if strings.HasSuffix(path, ".golden.yaml") || strings.HasSuffix(path, ".lookups.yaml") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := admitcases.Decode(string(b))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if obj["apiVersion"] != a.GroupVersionKind().GroupVersion().String() {
			// A case in another version (v1) is admitted once converted to
			// the stored one: engine/offline's TestRunPasses covers it.
			continue
		}
		got, err := a.Admit(obj)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		n++
		spec, _ := obj["spec"].(map[string]any)
		if _, set := spec["replicas"]; !set {
			if r := got["spec"].(map[string]any)["replicas"]; r != int64(1) {
				t.Errorf("%s: spec.replicas = %v, want the CRD's default 1", path, r)
			}
		}
	}
	if n < 5 {
		t.Errorf("admitted %d shipped parents, want every example and test case (at least 5)", n)
	}
}
