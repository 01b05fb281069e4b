package crd

import (
	"testing"

	"github.com/google/go-cmp/cmp"

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
