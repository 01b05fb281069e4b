package seed

import (
	"errors"
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

// judgeSeed: a parent that had a seed (loom.dev/seed) whose Secret is gone
// or holds another seed has lost it, unless loom.dev/accept-new-seed
// names the lost seed; a parent that never had one takes what it finds.
func TestJudgeSeed(t *testing.T) {
	parent := func(annotations map[string]string) *unstructured.Unstructured {
		p := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "charts.example.dev/v1", "kind": "RandomApp",
			"metadata": map[string]any{"name": "a", "namespace": "shop", "uid": "u1"}}}
		p.SetAnnotations(annotations)
		return p
	}
	had := map[string]string{AnnotationSeed: "f1/u1"}
	tests := []struct {
		name        string
		annotations map[string]string
		found       bool
		fp          string
		action      seedAction
		mark        bool
		lost        string // part of the error, "" for none
	}{
		{name: "the parent's seed", annotations: had, found: true, fp: "f1", action: useSeed},
		{name: "a parent from before the mark: its Secret, marked", found: true, fp: "f1", action: useSeed, mark: true},
		{name: "a new parent: a new seed, marked", action: makeSeed, mark: true},
		{name: "deleted: lost", annotations: had, action: makeSeed,
			lost: "seed Secret shop/loom-seed-x was deleted (seed f1)"},
		{name: "replaced: lost", annotations: had, found: true, fp: "f2", action: useSeed,
			lost: "holds another seed than the parent's"},
		{name: "deleted, the loss accepted: a new seed, marked", annotations: map[string]string{AnnotationSeed: "f1/u1", AnnotationAcceptNewSeed: "f1"},
			action: makeSeed, mark: true},
		{name: "replaced, the loss accepted: the Secret's seed, marked", annotations: map[string]string{AnnotationSeed: "f1/u1", AnnotationAcceptNewSeed: "f1"},
			found: true, fp: "f2", action: useSeed, mark: true},
		{name: "a mark copied from another parent (another UID) is no mark: a new seed", annotations: map[string]string{AnnotationSeed: "f1/u0"},
			action: makeSeed, mark: true},
		{name: "an acceptance of an earlier loss accepts no other", annotations: map[string]string{AnnotationSeed: "f2/u1", AnnotationAcceptNewSeed: "f1"},
			lost: "kubectl annotate randomapp.charts.example.dev a -n shop loom.dev/accept-new-seed=f2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action, mark, err := judgeSeed(parent(tt.annotations), "loom-seed-x", tt.found, tt.fp)
			if tt.lost != "" {
				var lost *LostError
				if !errors.As(err, &lost) || !strings.Contains(err.Error(), tt.lost) || lost.Reason() != "SeedLost" {
					t.Fatalf("err %v, want a LostError with %q", err, tt.lost)
				}
				return
			}
			if err != nil || action != tt.action || mark != tt.mark {
				t.Errorf("judgeSeed = %v, %v, %v; want %v, %v", action, mark, err, tt.action, tt.mark)
			}
		})
	}
}
