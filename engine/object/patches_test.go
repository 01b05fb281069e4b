package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestPatchTargets: the record of the objects a parent patches reads back
// as written, sorted and without duplicates; a malformed or oversized one
// is an error.
func TestPatchTargets(t *testing.T) {
	refs := []Ref{
		{GroupKind: schema.GroupKind{Kind: "ServiceAccount"}, Namespace: "shared", Name: "builder"},
		{GroupKind: schema.GroupKind{Kind: "Namespace"}, Name: "team-a"},
		{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Namespace: "web", Name: "api"},
		{GroupKind: schema.GroupKind{Kind: "Namespace"}, Name: "team-a"},
	}
	v := FormatPatchTargets(refs)
	if want := "Deployment.apps/web/api,Namespace//team-a,ServiceAccount/shared/builder"; v != want {
		t.Errorf("FormatPatchTargets = %q, want %q", v, want)
	}
	got, err := ParsePatchTargets(v)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(FormatPatchTargets(refs[:3]), FormatPatchTargets(got)); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if got, err := ParsePatchTargets(""); err != nil || got != nil {
		t.Errorf("ParsePatchTargets(\"\") = %v, %v", got, err)
	}
	for _, bad := range []string{"Namespace/team-a", "/ns/x", "ConfigMap/ns/", strings64()} {
		if _, err := ParsePatchTargets(bad); err == nil {
			t.Errorf("ParsePatchTargets(%q) succeeded", bad)
		}
	}
}

func strings64() string {
	s := "ConfigMap/ns/a"
	for i := 0; i < MaxPatchTargets; i++ {
		s += ",ConfigMap/ns/a"
	}
	return s
}
