package convert

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The status fields of a scale subresource (schema.scale) are in every
// version's schema, so converting a parent's status between versions (as
// the status writer does for a parent stored in another version than the
// hub) keeps them instead of pruning them; a field no version declares is
// pruned (and kept in the conversion data, as always).
func TestConvertKeepsTheScaleStatus(t *testing.T) {
	c := newTestConverter(t, `
parent: {apiVersion: example.loom.dev/v1, kind: Pool}
status: status.yaml
storageVersion: v1beta1
schema:
  spec: {replicas: integer, image: string}
  scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
versions:
- name: v1beta1
  schema:
    spec: {replicas: integer, image: {repository: string}}
  conversion:
    moves:
    - rename: {from: spec.image.repository, to: spec.image}
`, nil)
	hub := obj(t, "apiVersion: example.loom.dev/v1\nkind: Pool\n"+meta+
		"spec: {replicas: 5, image: nginx}\nstatus: {replicas: 5, selector: app=web, stray: x}\n")
	stored, err := c.Convert(hub, "v1beta1")
	if err != nil {
		t.Fatalf("Convert to v1beta1: %v", err)
	}
	want := map[string]any{"replicas": int64(5), "selector": "app=web"}
	if diff := cmp.Diff(want, stored.Object["status"]); diff != "" {
		t.Errorf("status in v1beta1 (-want +got):\n%s", diff)
	}
	back, err := c.Convert(stored, "v1")
	if err != nil {
		t.Fatalf("Convert to v1: %v", err)
	}
	// The conversion data brings back what v1beta1 could not hold.
	want["stray"] = "x"
	if diff := cmp.Diff(want, back.Object["status"]); diff != "" {
		t.Errorf("status back in v1 (-want +got):\n%s", diff)
	}
}
