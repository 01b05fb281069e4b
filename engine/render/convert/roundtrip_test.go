package convert

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sameFieldSet is a set whose v2 holds replicas at the hub's path.
const sameFieldSet = `
parent: {apiVersion: example.loom.dev/v1, kind: App}
schema: {spec: {replicas: integer, image: string}}
versions:
- name: v2
  schema: {spec: {replicas: integer, image: string}}
  conversion: {toHub: up.yaml, fromHub: down.yaml}
`

func TestRoundTrip(t *testing.T) {
	copySpec := func(p map[string]any) (map[string]any, error) {
		spec, _ := p["spec"].(map[string]any)
		return spec, nil
	}
	imageOnly := func(p map[string]any) (map[string]any, error) {
		spec, _ := p["spec"].(map[string]any)
		return map[string]any{"image": spec["image"]}, nil
	}
	calls := 0
	counting := func(p map[string]any) (map[string]any, error) {
		calls++
		spec, _ := p["spec"].(map[string]any)
		out := map[string]any{"image": spec["image"], "replicas": spec["replicas"]}
		if calls == 2 { // the way back of the trip
			out["replicas"] = int64(20)
		}
		return out, nil
	}
	const parent = "apiVersion: example.loom.dev/v1\nkind: App\nmetadata: {name: web}\nspec: {replicas: 2, image: nginx}\n"
	tests := []struct {
		name     string
		down, up func(map[string]any) (map[string]any, error)
		want     *RoundTripError
	}{
		{name: "exact", down: copySpec, up: copySpec},
		{name: "a field v2 could hold is dropped", down: imageOnly, up: copySpec,
			want: &RoundTripError{From: "v1", Via: "v2", Paths: []string{"spec.replicas"}, Lossy: true}},
		{name: "a conversion that is not a function of its input", down: copySpec, up: counting,
			want: &RoundTripError{From: "v1", Via: "v2", Paths: []string{"spec.replicas"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			c := newTestConverter(t, sameFieldSet, fakeTemplates{"up.yaml": tt.up, "down.yaml": tt.down})
			err := c.RoundTrip(obj(t, parent))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("RoundTrip() = %v, want nil", err)
				}
				return
			}
			var got *RoundTripError
			if !errors.As(err, &got) {
				t.Fatalf("RoundTrip() = %v, want a *RoundTripError", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RoundTrip (-want +got):\n%s", diff)
			}
		})
	}
}
