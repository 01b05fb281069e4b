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

// Every write Loom made of the TemplateSet is its own echo, not only the
// last: on a loaded machine a write's watch event can arrive after the
// next write, and an echo taken for somebody else's change wakes a
// decision that writes the parents' count again, in a loop for as long as
// parents come.
func TestOwnWriteKnowsEveryEchoInFlight(t *testing.T) {
	ts := func(uid, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetUID(types.UID(uid))
		u.SetResourceVersion(rv)
		return u
	}
	r := &rollouts{}
	r.remember("10")
	r.remember("11")
	tests := []struct {
		name     string
		old, cur *unstructured.Unstructured
		want     bool
	}{
		{"echo of the last write", ts("a", "10"), ts("a", "11"), true},
		{"echo of the write before, arriving late", ts("a", "9"), ts("a", "10"), true},
		{"somebody else's write", ts("a", "11"), ts("a", "12"), false},
		{"a TemplateSet made again", ts("a", "9"), ts("b", "10"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.ownWrite(tt.old, tt.cur); got != tt.want {
				t.Errorf("ownWrite(rv %s → %s) = %v, want %v", tt.old.GetResourceVersion(), tt.cur.GetResourceVersion(), got, tt.want)
			}
		})
	}
}
