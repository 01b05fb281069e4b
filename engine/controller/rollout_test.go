package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/render"
)

func TestTemplateSetName(t *testing.T) {
	tests := []struct {
		set, namespace, want string
	}{
		{set: "myresource", want: "myresource"},
		{set: "myresource", namespace: "team-a", want: "myresource.team-a"},
		{set: "My_Set", want: "my-set"},
		{set: "__", want: "set"},
		{set: "web.v2", namespace: "ns", want: "web.v2.ns"},
	}
	for _, tt := range tests {
		t.Run(tt.set+"/"+tt.namespace, func(t *testing.T) {
			if got := templateSetName(&render.Set{Name: tt.set}, tt.namespace); got != tt.want {
				t.Errorf("templateSetName(%q, %q) = %q, want %q", tt.set, tt.namespace, got, tt.want)
			}
		})
	}
}

// Every status Loom wrote to the TemplateSet is its own echo, not only the
// last, and whether or not the write has returned: on a loaded machine a
// write's watch event can arrive before the write returns, or after the
// next write. An echo taken for somebody else's change wakes a decision
// that writes the parents' count again, in a loop for as long as parents
// come.
func TestOwnWriteKnowsEveryEchoInFlight(t *testing.T) {
	ts := func(uid string, generation int64, total int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"status": map[string]any{"phase": "Complete", "parents": map[string]any{"total": total}},
		}}
		u.SetUID(types.UID(uid))
		u.SetGeneration(generation)
		return u
	}
	r := &rollouts{}
	r.remember(`{"parents":{"total":2},"phase":"Complete"}`)
	r.remember(`{"parents":{"total":4},"phase":"Complete"}`)
	cleared := ts("a", 1, 0)
	delete(cleared.Object, "status")
	tests := []struct {
		name     string
		old, cur *unstructured.Unstructured
		want     bool
	}{
		{"echo of the last write", ts("a", 1, 2), ts("a", 1, 4), true},
		{"echo of the write before, arriving late", ts("a", 1, 0), ts("a", 1, 2), true},
		{"somebody else's status", ts("a", 1, 4), ts("a", 1, 5), false},
		{"status cleared", ts("a", 1, 4), cleared, false},
		{"a spec edit", ts("a", 1, 4), ts("a", 2, 4), false},
		{"a TemplateSet made again", ts("a", 1, 2), ts("b", 1, 4), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.ownWrite(tt.old, tt.cur); got != tt.want {
				t.Errorf("ownWrite = %v, want %v", got, tt.want)
			}
		})
	}
}
