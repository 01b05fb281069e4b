package apply

import (
	"encoding/json"
	"testing"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/internal/fixture"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

var fuzzNames = []string{"spec", "replicas", "template", "containers", "image", "metadata", "labels", "data", "a", "b"}

// fuzzSet builds a field set from fuzz bytes: each group of bytes is one
// path of field names and list keys.
func fuzzSet(b []byte) *fieldpath.Set {
	s := fieldpath.NewSet()
	for len(b) > 0 {
		n := int(b[0]%4) + 1
		b = b[1:]
		var p fieldpath.Path
		for i := 0; i < n && len(b) > 0; i++ {
			c := b[0]
			b = b[1:]
			if c%7 == 0 {
				key := value.FieldList{{Name: "name", Value: value.NewValueInterface(fuzzNames[int(c/7)%len(fuzzNames)])}}
				p = append(p, fieldpath.PathElement{Key: &key})
				continue
			}
			name := fuzzNames[int(c)%len(fuzzNames)]
			p = append(p, fieldpath.PathElement{FieldName: &name})
		}
		if len(p) > 0 {
			s.Insert(p)
		}
	}
	return s
}

// objectOwning returns a Deployment whose managedFields give manager "loom"
// the fields in s (none when s is nil), beside other managers' entries.
func objectOwning(t *testing.T, s *fieldpath.Set, time string) *unstructured.Unstructured {
	u := fixture.Object(t, fixture.Deployment)
	entries := []any{map[string]any{"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1",
		"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:paused": map[string]any{}}}}}
	if s != nil && !s.Empty() {
		b, err := s.ToJSON()
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, map[string]any{"manager": "loom", "operation": "Apply", "apiVersion": "apps/v1",
			"time": time, "fieldsType": "FieldsV1", "fieldsV1": fields})
	}
	u.Object["metadata"].(map[string]any)["managedFields"] = entries
	u.SetUID("u1")
	u.SetResourceVersion("7")
	return u
}

// FuzzDriftDecision checks the apply stage's "unchanged" decision on random
// ownership: a child Loom applied (its entry then owned applied) and whose
// entry now owns live is left alone exactly when the two sets are equal,
// and the fields reported as taken back are exactly those Loom owns again.
func FuzzDriftDecision(f *testing.F) {
	f.Add([]byte{3, 1, 2, 3, 4}, []byte{3, 1, 2, 3, 4})
	f.Add([]byte{3, 1, 2, 3, 4}, []byte{1, 1})
	f.Add([]byte{2, 0, 14, 5, 6, 7}, []byte{2, 0, 14, 5, 6, 8})
	f.Add([]byte{}, []byte{1, 2})
	f.Fuzz(func(t *testing.T, appliedBytes, liveBytes []byte) {
		applied, live := fuzzSet(appliedBytes), fuzzSet(liveBytes)
		after := withHash(objectOwning(t, applied, "2026-01-01T00:00:00Z"), "h")
		before := withHash(objectOwning(t, live, "2026-02-02T00:00:00Z"), "h")

		a := New(nil, nil, "loom")
		ref := object.RefOf(after)
		a.remember(ref, newRecord("h", "u1", "7", "6", pack.Fingerprint(after, "loom")))
		unchanged, known := a.check(ref, "h", before)
		if !known {
			t.Fatal("a recorded child is not known")
		}
		if want := applied.Equals(live); unchanged != want {
			t.Fatalf("unchanged = %v, want %v (applied %s, live %s)", unchanged, want, applied, live)
		}

		got := regained(before, after, "loom")
		want := applied.Difference(live).Leaves()
		if len(got) != want.Size() {
			t.Fatalf("regained %v, want the %d leaves of %s", got, want.Size(), want)
		}
		if live.Difference(applied).Empty() && !applied.Equals(live) && len(got) == 0 {
			t.Fatalf("Loom lost fields (%s -> %s) but none is reported as taken back", applied, live)
		}
	})
}
