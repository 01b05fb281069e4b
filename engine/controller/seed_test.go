package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func TestSeedFrom(t *testing.T) {
	secret := func(owner, seed string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "s", "ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "X", "name": "p", "uid": owner}}},
			"data":     map[string]any{"seed": seed},
		}}
	}
	const good = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	tests := []struct {
		name, owner, seed, err string
	}{
		{name: "this parent's", owner: "u1", seed: good},
		{name: "another parent's", owner: "u0", seed: good, err: "not this parent's"},
		{name: "not base64", owner: "u1", seed: "%%%", err: "not 16 or more bytes"},
		{name: "too short", owner: "u1", seed: "c2hvcnQ=", err: "not 16 or more bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := seedFrom(secret(tt.owner, tt.seed), types.UID("u1"))
			if tt.err == "" {
				if err != nil || len(b) != 32 {
					t.Fatalf("seed %d bytes, err %v", len(b), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}

func TestSeedSecretName(t *testing.T) {
	p := &unstructured.Unstructured{Object: map[string]any{"kind": "RandomApp", "metadata": map[string]any{"name": "a"}}}
	if got := seedSecretName(p); got != "loom-seed-randomapp-a" {
		t.Errorf("name %q", got)
	}
	p.SetName(strings.Repeat("x", 250))
	if got := seedSecretName(p); len(got) > 253 || !strings.HasPrefix(got, "loom-seed-") {
		t.Errorf("long name %q (%d)", got, len(got))
	}
}
