package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/object"
)

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
