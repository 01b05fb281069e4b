package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The TemplateSet's Ready, Reconciling and Stalled conditions for each
// phase, as kubectl wait and kstatus read them.
func TestConditions(t *testing.T) {
	type c struct{ typ, status, reason, msg string }
	for _, tt := range []struct {
		phase Phase
		want  []c
	}{
		{"", []c{{"Ready", "True", "Complete", "m"}, {"Reconciling", "False", "Complete", ""}, {"Stalled", "False", "Complete", ""}}},
		{Complete, []c{{"Ready", "True", "Complete", "m"}, {"Reconciling", "False", "Complete", ""}, {"Stalled", "False", "Complete", ""}}},
		{Progressing, []c{{"Ready", "False", "Progressing", "m"}, {"Reconciling", "True", "Progressing", "m"}, {"Stalled", "False", "Progressing", ""}}},
		{Paused, []c{{"Ready", "False", "Paused", "m"}, {"Reconciling", "False", "Paused", "m"}, {"Stalled", "False", "Paused", ""}}},
		{Failed, []c{{"Ready", "False", "RolloutFailed", "m"}, {"Reconciling", "False", "RolloutFailed", ""}, {"Stalled", "True", "RolloutFailed", "m"}}},
		{RolledBack, []c{{"Ready", "True", "RolledBack", "m"}, {"Reconciling", "False", "RolledBack", ""}, {"Stalled", "True", "RolledBack", "m"}}},
	} {
		t.Run(string(tt.phase), func(t *testing.T) {
			var want []metav1.Condition
			for _, w := range tt.want {
				want = append(want, metav1.Condition{Type: w.typ, Status: metav1.ConditionStatus(w.status), Reason: w.reason, Message: w.msg})
			}
			if diff := cmp.Diff(want, Conditions(State{Phase: tt.phase, Message: "m"})); diff != "" {
				t.Errorf("Conditions (-want +got):\n%s", diff)
			}
		})
	}
}
