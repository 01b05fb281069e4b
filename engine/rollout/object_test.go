package rollout

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestFromObject(t *testing.T) {
	var ts unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(`
apiVersion: loom.dev/v1alpha1
kind: TemplateSet
metadata: {name: app}
spec: {paused: true, resume: r1, promote: abc, abort: def, suspend: true}
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
	s, ctl, err := FromObject(&ts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Controls{Paused: true, Resume: "r1", Promote: "abc", Abort: "def", Suspend: true}, ctl); diff != "" {
		t.Errorf("controls (-want +got):\n%s", diff)
	}
	if s.StableRevision != "s1" || s.CandidateRevision != "c1" || s.Step != 2 || s.Steps != 3 || s.Parents.Moved != 5 ||
		s.StepStartedAt == nil || s.Target("any-uid", true) != "c1" {
		t.Errorf("state: %+v", s)
	}
}

// A status that does not decode is an error: a zero State would be a
// first start, which makes the folder's revision stable for every parent.
func TestFromObjectRefusesAStatusItCannotRead(t *testing.T) {
	ts := unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "app"},
		"status":   map[string]any{"stableRevision": "s1", "step": "two"},
	}}
	if _, _, err := FromObject(&ts); err == nil || !strings.Contains(err.Error(), "TemplateSet app") {
		t.Fatalf("FromObject = %v, want an error naming TemplateSet app", err)
	}
}

// Suspended reads spec.suspend of a TemplateSet, whatever else it holds:
// the parents' controllers call it on every TemplateSet event.
func TestSuspended(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  any
		want bool
	}{
		{"spec.suspend true", &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"suspend": true}}}, true},
		{"spec.suspend false", &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"suspend": false}}}, false},
		{"no spec", &unstructured.Unstructured{Object: map[string]any{}}, false},
		{"a status it cannot read", &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"suspend": true}, "status": map[string]any{"step": "two"}}}, true},
		{"not a TemplateSet", "x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Suspended(tc.obj); got != tc.want {
				t.Errorf("Suspended = %v, want %v", got, tc.want)
			}
		})
	}
}
