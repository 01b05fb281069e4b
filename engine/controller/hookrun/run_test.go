package hookrun

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// WithRecord takes the status.release Loom last wrote over the cached
// one, and leaves the cached parent alone.
func TestWithRecord(t *testing.T) {
	withRelease := func(rel any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "a"}}}
		if rel != nil {
			u.Object["status"] = map[string]any{"release": rel}
		}
		return u
	}
	older := map[string]any{"revision": int64(1)}
	newer := map[string]any{"revision": int64(2)}
	tests := []struct {
		name         string
		parent, prev *unstructured.Unstructured
		want         *unstructured.Unstructured
		same         bool
	}{
		{name: "no record written", parent: withRelease(older), prev: withRelease(nil), want: withRelease(older), same: true},
		{name: "cache caught up", parent: withRelease(newer), prev: withRelease(newer), want: withRelease(newer), same: true},
		{name: "cache behind", parent: withRelease(older), prev: withRelease(newer), want: withRelease(newer)},
		{name: "cache without status", parent: withRelease(nil), prev: withRelease(newer), want: withRelease(newer)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.parent.DeepCopy()
			got := WithRecord(tt.parent, tt.prev)
			if diff := cmp.Diff(tt.want.Object, got.Object); diff != "" {
				t.Errorf("WithRecord (-want +got):\n%s", diff)
			}
			if (got == tt.parent) != tt.same {
				t.Errorf("WithRecord returned the parent itself: %v, want %v", got == tt.parent, tt.same)
			}
			if diff := cmp.Diff(before.Object, tt.parent.Object); diff != "" {
				t.Errorf("WithRecord changed the cached parent (-before +after):\n%s", diff)
			}
		})
	}
}
