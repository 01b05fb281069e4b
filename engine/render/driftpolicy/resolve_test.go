package driftpolicy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/internal/fixture"
)

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {%s}
spec:
  replicas: 2
  template: {metadata: {annotations: {example.com/rev: "1"}}}
`

// Resolve writes the set's defaults into a child's drift annotations, and
// refuses a bad mode or a path that names no field the child sets, with a
// suggestion. On the old code a bad annotation rendered without a word.
func TestResolve(t *testing.T) {
	warnSet := &config.Drift{Mode: "warn"}
	ignoreSet := &config.Drift{Ignore: []config.DriftIgnore{
		{Kind: "Deployment", Paths: []string{"spec.replicas", "spec.paused"}},
		{Kind: "Deployment", Name: "other", Paths: []string{"metadata.name"}},
		{Kind: "ConfigMap", Paths: []string{"data"}},
	}}
	tests := []struct {
		name, ann string
		cfg       *config.Drift
		want      map[string]string // the drift annotations after
		wantErr   string
		wantAt    string
	}{
		{name: "nothing said: nothing written", want: map[string]string{}},
		{name: "the set's mode", cfg: warnSet, want: map[string]string{"loom.dev/drift": "warn"}},
		{name: "the child's mode wins", ann: `loom.dev/drift: repair`, cfg: warnSet, want: map[string]string{"loom.dev/drift": "repair"}},
		{name: "a typo", ann: `loom.dev/drift: wran`, wantErr: `(did you mean "warn"?)`, wantAt: "loom.dev/drift:"},
		{name: "ignore paths of the child", ann: `loom.dev/drift-ignore: "spec.replicas, spec.template.metadata.annotations.example\\.com/rev"`,
			want: map[string]string{"loom.dev/drift-ignore": `spec.replicas, spec.template.metadata.annotations.example\.com/rev`}},
		{name: "the set's paths the child sets, after its own", ann: `loom.dev/drift-ignore: spec.template`, cfg: ignoreSet,
			want: map[string]string{"loom.dev/drift-ignore": "spec.template, spec.replicas"}},
		{name: "a path the child does not set", ann: `loom.dev/drift-ignore: spec.replica`,
			wantErr: `"spec.replica" names no field the template sets (did you mean "spec.replicas"?)`, wantAt: "loom.dev/drift-ignore"},
		{name: "not a path", ann: `loom.dev/drift-ignore: "spec..replicas"`, wantErr: "is not a field path", wantAt: "loom.dev/drift-ignore"},
		{name: "into a list", ann: `loom.dev/drift-ignore: "spec.containers[0]"`, wantErr: "goes into a list", wantAt: "loom.dev/drift-ignore"},
		{name: "empty", ann: `loom.dev/drift-ignore: " , "`, wantErr: "names no field path", wantAt: "loom.dev/drift-ignore"},
		{name: "a patch child takes the set's mode as repair", ann: `loom.dev/manage: patch`, cfg: warnSet, want: map[string]string{}},
		{name: "a patch child in warn", ann: `loom.dev/manage: patch, loom.dev/drift: warn`, wantErr: "a patch child's fields are always taken back", wantAt: "loom.dev/drift:"},
		{name: "a patch child with ignore paths", ann: `loom.dev/manage: patch, loom.dev/drift-ignore: spec.replicas`, wantErr: "a patch child's fields are always taken back", wantAt: "loom.dev/drift-ignore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := fixture.Object(t, strings.Replace(deployment, "%s", tt.ann, 1))
			at, err := Resolve(obj.Object, tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || at != tt.wantAt {
					t.Fatalf("Resolve = %q, %v; want an error with %q at %s", at, err, tt.wantErr, tt.wantAt)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range obj.GetAnnotations() {
				if strings.HasPrefix(k, "loom.dev/drift") {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
