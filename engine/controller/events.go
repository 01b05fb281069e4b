package controller

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

// condition is the part of a status condition that transitions compare.
type condition struct {
	status, reason, message string
}

// conditionOf reads one condition from a status map.
func conditionOf(st map[string]any, typ string) condition {
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return condition{status: s, reason: r, message: msg}
	}
	return condition{}
}

// recordTransitions records Events when the parent becomes Ready, stops
// being Ready, or becomes Degraded (or Degraded for another reason). Every
// other reconcile records nothing.
func (c *Controller) recordTransitions(parent, prev *unstructured.Unstructured, want map[string]any) {
	old, _ := prev.Object["status"].(map[string]any)
	oldReady, newReady := conditionOf(old, status.TypeReady), conditionOf(want, status.TypeReady)
	oldDeg, newDeg := conditionOf(old, status.TypeDegraded), conditionOf(want, status.TypeDegraded)
	rec := c.sh.Recorder
	switch {
	case newReady.status == "True" && oldReady.status != "True":
		rec.Event(parent, corev1.EventTypeNormal, "Ready", newReady.message)
	case newReady.status != "True" && oldReady.status == "True" && newDeg.status != "True":
		rec.Event(parent, corev1.EventTypeNormal, "NotReady", newReady.message)
	}
	if newDeg.status == "True" && (oldDeg.status != "True" || oldDeg.reason != newDeg.reason) {
		rec.Event(parent, corev1.EventTypeWarning, newDeg.reason, newDeg.message)
	}
	if newDeg.status != "True" && oldDeg.status == "True" {
		rec.Event(parent, corev1.EventTypeNormal, "Recovered", "no longer degraded: "+oldDeg.reason+" resolved")
	}
}

// recordDrift records a Warning Event on the parent for each child that
// another writer had changed and this reconcile changed back. A writer that
// keeps changing a field (an autoscaler on replicas, say) shows as repeated
// Events, which the recorder aggregates.
func (c *Controller) recordDrift(ctx context.Context, parent *unstructured.Unstructured, results object.ChangeSet) {
	for _, r := range results {
		if len(r.Drift) == 0 {
			continue
		}
		klog.FromContext(ctx).Info("Reverted a change by another writer", "child", r.Ref.String(), "fields", r.Drift)
		c.sh.Metrics.DriftRepairs.WithLabelValues(c.gvk.Kind).Inc()
		c.sh.Recorder.Eventf(parent, corev1.EventTypeWarning, "DriftReverted",
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
