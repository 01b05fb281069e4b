package rollouts

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/rollout"
)

// rolloutParent takes a parent's conditions only when its status is of
// its generation, and the Degraded message over the Ready one.
func TestRolloutParent(t *testing.T) {
	obj := func(gen, observed int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "u1", "generation": gen},
			"status":   map[string]any{"observedGeneration": observed, "templateRevision": "r1"},
		}}
		return u
	}
	tests := []struct {
		name string
		in   Parent
		want rollout.Parent
	}{
		{name: "ready, current",
			in:   Parent{Object: obj(2, 2), Ready: Condition{Status: "True", Message: "all ready"}},
			want: rollout.Parent{Name: "ns/p", UID: "u1", Revision: "r1", Ready: true, Message: "all ready"}},
		{name: "degraded, current",
			in:   Parent{Object: obj(2, 2), Ready: Condition{Status: "False", Message: "waiting"}, Degraded: Condition{Status: "True", Message: "broken"}},
			want: rollout.Parent{Name: "ns/p", UID: "u1", Revision: "r1", Degraded: true, Message: "broken"}},
		{name: "status of an older generation",
			in:   Parent{Object: obj(3, 2), Ready: Condition{Status: "True", Message: "all ready"}},
			want: rollout.Parent{Name: "ns/p", UID: "u1", Revision: "r1", Message: "all ready"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, rolloutParent(tt.in)); diff != "" {
				t.Errorf("rolloutParent (-want +got):\n%s", diff)
			}
		})
	}
}
