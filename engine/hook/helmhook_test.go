package hook

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// helmPhase is what Helm 4 makes of an object's annotations: the phase
// Loom gives the hook Helm sorts it into (NeverHook for one Helm skips
// as unknown), and Helm's weight.
func helmPhase(t *testing.T, ann map[string]any) (Stage, int) {
	t.Helper()
	doc, err := json.Marshal(map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "migrate", "annotations": ann}})
	if err != nil {
		t.Fatal(err)
	}
	hooks, manifests, err := releaseutil.SortManifests(map[string]string{"templates/job.yaml": string(doc)}, nil, releaseutil.InstallOrder)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case len(manifests) == 1:
		return NotHook, 0
	case len(hooks) == 0:
		return NeverHook, 0 // Helm skips a hook of an unknown type
	}
	h := hooks[0]
	phase := NeverHook
	for _, e := range h.Events {
		switch e {
		case helmrelease.HookPreInstall, helmrelease.HookPreUpgrade:
			phase = PreHook
		case helmrelease.HookPostInstall, helmrelease.HookPostUpgrade:
			if phase != PreHook {
				phase = PostHook
			}
		}
	}
	for _, e := range h.Events {
		if e == helmrelease.HookTest {
			phase = NeverHook
		}
	}
	return phase, h.Weight
}

// Loom reads a hook's type and weight as Helm 4 does: types are
// lower-cased and trimmed, a hook with a type Helm does not know is
// skipped whole, and a weight Helm cannot parse is 0.
func TestHookOfAgreesWithHelm(t *testing.T) {
	tests := []map[string]any{
		{"helm.sh/hook": "pre-install"},
		{"helm.sh/hook": "Pre-Install"},
		{"helm.sh/hook": "POST-UPGRADE"},
		{"helm.sh/hook": " pre-upgrade , post-install "},
		{"helm.sh/hook": "pre-install,crd-install"},
		{"helm.sh/hook": "crd-install"},
		{"helm.sh/hook": ""},
		{"helm.sh/hook": "test-success"},
		{"helm.sh/hook": "Test"},
		{"helm.sh/hook": "pre-install,test"},
		{"helm.sh/hook": "pre-delete"},
		{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "-5"},
		{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": " 5"},
		{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "five"},
		{"helm.sh/hook-weight": "3"},
		{"other": "x"},
	}
	for _, ann := range tests {
		name, _ := json.Marshal(ann)
		t.Run(string(name), func(t *testing.T) {
			wantPhase, wantWeight := helmPhase(t, ann)
			gotPhase, gotWeight := stageOf(map[string]any{"metadata": map[string]any{"name": "migrate", "annotations": ann}})
			type pw struct{ Phase, Weight int }
			if diff := cmp.Diff(pw{int(wantPhase), wantWeight}, pw{int(gotPhase), gotWeight}); diff != "" {
				t.Errorf("stageOf (-helm +loom):\n%s", diff)
			}
		})
	}
}
