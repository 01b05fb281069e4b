package rollout

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	switch s.Phase {
	case Progressing:
		return []metav1.Condition{cond("Ready", false, "Progressing", s.Message), cond("Reconciling", true, "Progressing", s.Message), cond("Stalled", false, "Progressing", "")}
	case Paused:
		return []metav1.Condition{cond("Ready", false, "Paused", s.Message), cond("Reconciling", false, "Paused", s.Message), cond("Stalled", false, "Paused", "")}
	case Failed:
		return []metav1.Condition{cond("Ready", false, "RolloutFailed", s.Message), cond("Reconciling", false, "RolloutFailed", ""), cond("Stalled", true, "RolloutFailed", s.Message)}
	case RolledBack:
		return []metav1.Condition{cond("Ready", true, "RolledBack", s.Message), cond("Reconciling", false, "RolledBack", ""), cond("Stalled", true, "RolledBack", s.Message)}
	}
	return []metav1.Condition{cond("Ready", true, "Complete", s.Message), cond("Reconciling", false, "Complete", ""), cond("Stalled", false, "Complete", "")}
}
