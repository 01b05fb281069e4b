package statuswriter

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/status"
)

// Condition is the part of a status condition that transitions compare,
// and that a rollout reads of each parent.
type Condition struct {
	Status, Reason, Message string
}

// ConditionOf reads one condition from a status map; the zero Condition
// when it has none of that type.
func ConditionOf(st map[string]any, typ string) Condition {
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return Condition{Status: s, Reason: r, Message: msg}
	}
	return Condition{}
}

// recordTransitions records Events when the parent becomes Ready, stops
// being Ready, or becomes Degraded (or Degraded for another reason). Every
// other reconcile records nothing.
func (w *Writer) recordTransitions(parent, prev *unstructured.Unstructured, want map[string]any) {
	old, _ := prev.Object["status"].(map[string]any)
	oldReady, newReady := ConditionOf(old, status.TypeReady), ConditionOf(want, status.TypeReady)
	oldDeg, newDeg := ConditionOf(old, status.TypeDegraded), ConditionOf(want, status.TypeDegraded)
	rec := w.cfg.Recorder
	switch {
	case newReady.Status == "True" && oldReady.Status != "True":
		rec.Event(parent, corev1.EventTypeNormal, "Ready", newReady.Message)
	case newReady.Status != "True" && oldReady.Status == "True" && newDeg.Status != "True":
		rec.Event(parent, corev1.EventTypeNormal, "NotReady", newReady.Message)
	}
	if newDeg.Status == "True" && (oldDeg.Status != "True" || oldDeg.Reason != newDeg.Reason) {
		rec.Event(parent, corev1.EventTypeWarning, newDeg.Reason, newDeg.Message)
	}
	if newDeg.Status != "True" && oldDeg.Status == "True" {
		rec.Event(parent, corev1.EventTypeNormal, "Recovered", "no longer degraded: "+oldDeg.Reason+" resolved")
	}
}
