package controller

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func TestSeedFrom(t *testing.T) {
	secret := func(owner, seed string, kept map[string]any) *unstructured.Unstructured {
		data := map[string]any{"seed": seed}
		for k, v := range kept {
			data[k] = v
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "s", "ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "X", "name": "p", "uid": owner}}},
			"data":     data,
		}}
	}
	const good = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	tests := []struct {
		name, owner, seed, err string
		data                   map[string]any
		kept                   map[string]string
	}{
		{name: "this parent's", owner: "u1", seed: good},
		{name: "with generated values", owner: "u1", seed: good,
			data: map[string]any{"gen.ab12": "YWRtaW46JDJhJDEwJHh5eg==", "gen.bad": "%%%", "other": "eA=="},
			kept: map[string]string{"gen.ab12": "admin:$2a$10$xyz"}},
		{name: "another parent's", owner: "u0", seed: good, err: "not this parent's"},
		{name: "not base64", owner: "u1", seed: "%%%", err: "not 16 or more bytes"},
		{name: "too short", owner: "u1", seed: "c2hvcnQ=", err: "not 16 or more bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := seedFrom(secret(tt.owner, tt.seed, tt.data), types.UID("u1"))
			if tt.err == "" {
				if err != nil || len(got.Bytes) != 32 {
					t.Fatalf("seed %d bytes, err %v", len(got.Bytes), err)
				}
				if diff := cmp.Diff(tt.kept, got.Kept); diff != "" {
					t.Errorf("kept values (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}

// A seed Secret's name holds the parent's group: two sets of the same
// Kind in two groups, with parents of the same name, get two Secrets.
func TestSeedSecretName(t *testing.T) {
	parent := func(apiVersion, kind, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}}
	}
	tests := []struct {
		name   string
		parent *unstructured.Unstructured
		want   string
	}{
		{"kind, group and name", parent("charts.example.dev/v1", "RandomApp", "a"), "loom-seed-randomapp.charts.example.dev-a"},
		{"the same kind in another group", parent("other.example.dev/v1", "RandomApp", "a"), "loom-seed-randomapp.other.example.dev-a"},
		{"another version of the same group: the same Secret", parent("charts.example.dev/v2", "RandomApp", "a"), "loom-seed-randomapp.charts.example.dev-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := seedSecretName(tt.parent); got != tt.want {
				t.Errorf("seedSecretName = %q, want %q", got, tt.want)
			}
		})
	}
	long := parent("charts.example.dev/v1", "RandomApp", strings.Repeat("x", 250))
	other := parent("other.example.dev/v1", "RandomApp", strings.Repeat("x", 250))
	got := seedSecretName(long)
	if len(got) > 253 || !strings.HasPrefix(got, "loom-seed-") {
		t.Errorf("long name %q (%d)", got, len(got))
	}
	if got == seedSecretName(other) {
		t.Errorf("two groups, one long name: %q", got)
	}
	// The name before the group was in it, which Loom migrates from.
	if got := legacySeedSecretName(parent("charts.example.dev/v1", "RandomApp", "a")); got != "loom-seed-randomapp-a" {
		t.Errorf("legacy name %q", got)
	}
}
