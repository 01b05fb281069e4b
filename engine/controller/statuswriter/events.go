package statuswriter

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/object"
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
	w.recordDrifted(parent, ConditionOf(old, status.TypeDrifted), ConditionOf(want, status.TypeDrifted))
}

// recordDrifted records a Warning Event, and counts it, when the Drifted
// condition (children in drift mode warn that another writer changed)
// becomes True or names other children or fields; a Normal Event when it
// stops being True. The condition already on the parent is what it is
// compared with, so a reconcile that finds the same drift, or a restarted
// Loom, records nothing again.
func (w *Writer) recordDrifted(parent *unstructured.Unstructured, old, cur Condition) {
	switch {
	case cur.Status == "True" && (old.Status != "True" || old.Message != cur.Message):
		if w.cfg.DriftWarnings != nil {
			w.cfg.DriftWarnings.WithLabelValues(w.cfg.GVK.Kind).Inc()
		}
		w.cfg.Recorder.Event(parent, corev1.EventTypeWarning, "Drifted", cur.Message)
	case cur.Status != "True" && old.Status == "True":
		w.cfg.Recorder.Event(parent, corev1.EventTypeNormal, "DriftResolved", "no child has fields changed by another writer any more")
	}
}

// RecordDrift records a Warning Event on the parent for each child that
// another writer had changed and this reconcile changed back. A writer that
// keeps changing a field (an autoscaler on replicas, say) shows as repeated
// Events, which the recorder aggregates.
func (w *Writer) RecordDrift(ctx context.Context, parent *unstructured.Unstructured, results object.ChangeSet) {
	for _, r := range results {
		if len(r.Drift) == 0 {
			continue
		}
		klog.FromContext(ctx).Info("Reverted a change by another writer", "child", r.Ref.String(), "fields", r.Drift)
		if w.cfg.DriftRepairs != nil {
			w.cfg.DriftRepairs.WithLabelValues(w.cfg.GVK.Kind).Inc()
		}
		w.cfg.Recorder.Eventf(parent, corev1.EventTypeWarning, "DriftReverted",
			"%s was changed by another writer at %s; Loom changed it back to what the templates render", r.Ref, fieldList(r.Drift))
	}
}

// fieldList names up to three fields, and how many more there are.
func fieldList(fields []string) string {
	const most = 3
	if len(fields) <= most {
		return strings.Join(fields, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(fields[:most], ", "), len(fields)-most)
}
