package status

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The Drifted condition: True naming each child warned of and its fields,
// False once a parent that had it has none left, absent on a parent that
// never had one, and kept as it was while the templates do not render. On
// the old code no parent had a Drifted condition.
func TestDriftedCondition(t *testing.T) {
	parent := obj(t, `{apiVersion: loom.dev/v1, kind: App, metadata: {name: a, namespace: ns, generation: 1}}`)
	web := object.Ref{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Namespace: "ns", Name: "web"}
	cfg := object.Ref{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "ns", Name: "cfg"}
	drifted := object.ChangeSet{
		{Ref: web, Action: object.Unchanged, Drifted: []string{"spec.replicas"}},
		{Ref: cfg, Action: object.Unchanged, Drifted: []string{"data.a", "data.b", "data.c", "data.d"}},
	}
	was := func(status, reason, msg string) map[string]any {
		return map[string]any{"conditions": []any{map[string]any{"type": TypeDrifted, "status": status, "reason": reason,
			"message": msg, "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	}
	tests := []struct {
		name      string
		prev      map[string]any
		results   object.ChangeSet
		renderErr error
		want      *metav1.Condition
	}{
		{name: "never drifted: no condition", results: object.ChangeSet{{Ref: web, Action: object.Unchanged}}},
		{name: "drifted", results: drifted, want: &metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonChangedByAnotherWriter,
			Message: "another writer changed Deployment.apps ns/web at spec.replicas; ConfigMap ns/cfg at data.a, data.b, data.c and 1 more; Loom leaves them as they are (loom.dev/drift: warn)"}},
		{name: "no longer drifted", prev: was("True", ReasonChangedByAnotherWriter, "x"), results: object.ChangeSet{{Ref: web, Action: object.Configured}},
			want: &metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonNoDrift, Message: "no child has fields changed by another writer"}},
		{name: "templates do not render: kept", prev: was("True", ReasonChangedByAnotherWriter, "x"), renderErr: errors.New("boom"),
			want: &metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonChangedByAnotherWriter, Message: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parent
			if tt.prev != nil {
				p = withStatus(t, parent, tt.prev)
			}
			st := Compute(Input{Parent: p, Results: tt.results, RenderErr: tt.renderErr})
			got := meta.FindStatusCondition(decodeConditions(st["conditions"]), TypeDrifted)
			if tt.want == nil {
				if got != nil {
					t.Errorf("Drifted = %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatal("no Drifted condition")
			}
			if diff := cmp.Diff(*tt.want, metav1.Condition{Status: got.Status, Reason: got.Reason, Message: got.Message}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// A Drifted condition the parent lacks, or holds otherwise, is
			// a status to write.
			without := map[string]any{}
			for k, v := range st {
				without[k] = v
			}
			var others []any
			for _, c := range st["conditions"].([]any) {
				if c.(map[string]any)["type"] != TypeDrifted {
					others = append(others, c)
				}
			}
			without["conditions"] = others
			if Equal(st, withStatus(t, p, without)) {
				t.Error("Equal says the parent's status, without Drifted, is the one computed")
			}
		})
	}
}

// The message names at most maxDriftedChildren children.
func TestDriftedMessageIsBounded(t *testing.T) {
	lines := make([]string, 40)
	for i := range lines {
		lines[i] = "ConfigMap ns/c at data.a"
	}
	msg := DriftedMessage(lines)
	if strings.Count(msg, "ConfigMap") != maxDriftedChildren || !strings.Contains(msg, "(and 35 more children)") {
		t.Errorf("message = %q", msg)
	}
}
