package webhook

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/config"
)

func TestRenamesOnly(t *testing.T) {
	c := config.Config{Parent: config.ParentRef{APIVersion: "example.com/v1", Kind: "WebApp"}, Versions: []config.Version{{
		Name: "v1alpha1", Conversion: config.Conversion{Moves: []config.Move{{Rename: &config.Rename{From: "spec.size", To: "spec.scale.replicas"}}}},
	}}}
	conv := RenamesOnly(c)
	if conv == nil {
		t.Fatal("RenamesOnly = nil for a set of renames")
	}
	obj := func(s string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	old := obj(`{apiVersion: example.com/v1alpha1, kind: WebApp, metadata: {name: a}, spec: {size: 2, image: web}}`)
	hub := obj(`{apiVersion: example.com/v1, kind: WebApp, metadata: {name: a}, spec: {scale: {replicas: 2}, image: web}}`)
	up, err := conv.Convert(old, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(hub.Object, up.Object); diff != "" {
		t.Errorf("up (-want +got):\n%s", diff)
	}
	down, err := conv.Convert(hub, "v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(old.Object, down.Object); diff != "" {
		t.Errorf("down (-want +got):\n%s", diff)
	}
	c.Versions[0].Conversion.Moves = append(c.Versions[0].Conversion.Moves, config.Move{Default: &config.Default{Path: "spec.x", Value: 1}})
	if RenamesOnly(c) != nil {
		t.Error("RenamesOnly is not nil for a set with a default move")
	}
}
