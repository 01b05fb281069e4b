package rollout

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/api/v1alpha1"
)

// Conditions are the TemplateSet's conditions for s, in kstatus's terms so
// that kubectl wait and kstatus-based tools understand them: Ready when
// every parent renders the stable revision, Reconciling while a candidate
// moves, Stalled when a step failed or the candidate was rolled back.
// LastTransitionTime is left for the caller (meta.SetStatusCondition).
func Conditions(s State) []metav1.Condition {
	cond := func(typ string, ok bool, reason, msg string) metav1.Condition {
		st := metav1.ConditionFalse
		if ok {
			st = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg}
	}
	const ready, reconciling, stalled = v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled
	switch s.Phase {
	case Progressing:
		r := v1alpha1.ReasonProgressing
		return []metav1.Condition{cond(ready, false, r, s.Message), cond(reconciling, true, r, s.Message), cond(stalled, false, r, "")}
	case Paused:
		r := v1alpha1.ReasonPaused
		return []metav1.Condition{cond(ready, false, r, s.Message), cond(reconciling, false, r, s.Message), cond(stalled, false, r, "")}
	case Failed:
		r := v1alpha1.ReasonRolloutFailed
		return []metav1.Condition{cond(ready, false, r, s.Message), cond(reconciling, false, r, ""), cond(stalled, true, r, s.Message)}
	case RolledBack:
		r := v1alpha1.ReasonRolledBack
		return []metav1.Condition{cond(ready, true, r, s.Message), cond(reconciling, false, r, ""), cond(stalled, true, r, s.Message)}
	}
	r := v1alpha1.ReasonComplete
	return []metav1.Condition{cond(ready, true, r, s.Message), cond(reconciling, false, r, ""), cond(stalled, false, r, "")}
}
