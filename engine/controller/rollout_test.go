package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/rollout"
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

func TestRolloutStateOf(t *testing.T) {
	var ts unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(`
apiVersion: loom.dev/v1alpha1
kind: TemplateSet
metadata: {name: app}
spec: {paused: true, resume: r1, promote: abc, abort: def}
status:
  stableRevision: s1
  candidateRevision: c1
  phase: Progressing
  step: 2
  steps: 3
  threshold: "9223372036854775808"
  stepStartedAt: "2026-11-23T12:00:00Z"
  parents: {total: 20, moved: 5, ready: 4}
  set: templates/app
  conditions: [{type: Ready, status: "False", reason: Progressing, message: x, lastTransitionTime: "2026-11-23T12:00:00Z"}]
`), &ts.Object); err != nil {
		t.Fatal(err)
	}
	s, ctl := rolloutStateOf(&ts)
	if diff := cmp.Diff(rollout.Controls{Paused: true, Resume: "r1", Promote: "abc", Abort: "def"}, ctl); diff != "" {
		t.Errorf("controls (-want +got):\n%s", diff)
	}
	if s.StableRevision != "s1" || s.CandidateRevision != "c1" || s.Step != 2 || s.Steps != 3 || s.Parents.Moved != 5 ||
		s.StepStartedAt == nil || s.Target("any-uid", true) != "c1" {
		t.Errorf("state: %+v", s)
	}
}
