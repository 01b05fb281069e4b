package controller

import (
	"testing"

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
