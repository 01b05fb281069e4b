package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// check decides, without a request, whether a child needs a write.
func TestCheck(t *testing.T) {
	desired := &unstructured.Unstructured{Object: obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {mode: fast}}`)}
	hash, err := Hash(desired)
	if err != nil {
		t.Fatal(err)
	}
	sent := withHash(desired, hash)
	live := func(rv, mode string, ann map[string]string) *unstructured.Unstructured {
		u := sent.DeepCopy()
		u.SetResourceVersion(rv)
		_ = unstructured.SetNestedField(u.Object, mode, "data", "mode")
		if ann != nil {
			u.SetAnnotations(ann)
		}
		return u
	}
	// What a server that writes "fast" as "FAST" would have answered.
	normalised := Project(sent.Object, live("5", "FAST", nil).Object)
	tests := []struct {
		name          string
		rec           *record
		live          *unstructured.Unstructured
		wantUnchanged bool
		wantSame      bool
	}{
		{"not in the cache, never applied", nil, nil, false, false},
		{"not in the cache yet, just applied", &record{hash: hash, rv: 5}, nil, true, false},
		{"cache older than Loom's own write", &record{hash: hash, rv: 5}, live("4", "slow", nil), true, false},
		{"live as written", &record{hash: hash, rv: 5}, live("5", "fast", nil), true, true},
		{"live as written, after a restart", nil, live("5", "fast", nil), true, true},
		{"live as the server normalised it", &record{hash: hash, rv: 5, projection: normalised}, live("5", "FAST", nil), true, true},
		{"normalised, but no record of it (restart)", nil, live("5", "FAST", nil), false, true},
		{"changed by another writer", &record{hash: hash, rv: 5}, live("6", "slow", nil), false, true},
		{"changed by another writer, after a normalisation", &record{hash: hash, rv: 5, projection: normalised}, live("6", "slow", nil), false, true},
		{"applied from another desired object", &record{hash: "old", rv: 5}, live("5", "fast", map[string]string{AnnotationApplied: "old"}), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Applier{applied: map[Ref]record{}}
			if tt.rec != nil {
				a.applied[RefOf(desired)] = *tt.rec
			}
			unchanged, same := a.check(RefOf(desired), hash, sent, tt.live)
			if unchanged != tt.wantUnchanged || same != tt.wantSame {
				t.Errorf("check = unchanged %v, sameDesired %v; want %v, %v", unchanged, same, tt.wantUnchanged, tt.wantSame)
			}
		})
	}
}
