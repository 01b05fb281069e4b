package crd

import (
	"strings"
	"testing"

	"github.com/loom-operator/loom/engine/config"
)

// A chart set's CRD types the values values.yaml lists and keeps the
// others: the API server refuses a string for a number, and stores a key
// values.yaml does not know.
func TestGenerateForChartInfersTheValues(t *testing.T) {
	values := map[string]any{
		"replicaCount": 2.0,
		"image":        map[string]any{"repository": "nginx", "tag": ""},
		"enabled":      true,
		"tolerations":  []any{},
		"nothing":      nil,
		"extra":        map[string]any{},
	}
	c := config.Config{Parent: config.ParentRef{APIVersion: "example.loom.dev/v1", Kind: "App"}, Chart: "chart"}
	def, err := GenerateForChart(c, values)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAdmitter(def)
	if err != nil {
		t.Fatalf("the inferred schema is not one the API server takes: %v", err)
	}
	good := map[string]any{"apiVersion": "example.loom.dev/v1", "kind": "App", "metadata": map[string]any{"name": "a", "namespace": "ns"},
		"spec": map[string]any{"replicaCount": int64(3), "image": map[string]any{"tag": "1.0", "pullPolicy": "Always"},
			"tolerations": []any{map[string]any{"key": "k"}}, "nothing": map[string]any{"a": "b"}, "global": map[string]any{"region": "eu"}}}
	out, err := a.Admit(good)
	if err != nil {
		t.Fatalf("good values refused: %v", err)
	}
	spec := out["spec"].(map[string]any)
	if spec["global"] == nil || spec["image"].(map[string]any)["pullPolicy"] != "Always" {
		t.Errorf("unknown values were pruned: %v", spec)
	}
	bad := map[string]any{"apiVersion": "example.loom.dev/v1", "kind": "App", "metadata": map[string]any{"name": "a", "namespace": "ns"},
		"spec": map[string]any{"replicaCount": "three", "enabled": "yes"}}
	if _, err := a.Admit(bad); err == nil || !strings.Contains(err.Error(), "spec.replicaCount") || !strings.Contains(err.Error(), "spec.enabled") {
		t.Errorf("wrong types: %v", err)
	}
	// A schema in loom.yaml wins over inference.
	c.Schema = &config.Schema{Spec: map[string]any{"size": "integer"}}
	def, err = GenerateForChart(c, values)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := def.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"]; !ok {
		t.Error("loom.yaml's schema was replaced by the inferred one")
	}
}
