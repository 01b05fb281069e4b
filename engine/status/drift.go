package status

import (
	"fmt"
	"strings"

	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TypeDrifted is True while another writer has changed fields of children
// whose drift mode is warn (object.AnnotationDrift): Loom leaves them as
// they are and names them here. A parent that never had such a child has
// no Drifted condition; once it had one, it is False when none is left.
const TypeDrifted = "Drifted"

// The reasons of TypeDrifted.
const (
	// ReasonChangedByAnotherWriter: children's fields were changed.
	ReasonChangedByAnotherWriter = "ChangedByAnotherWriter"
	// ReasonNoDrift: no child is drifted any more.
	ReasonNoDrift = "NoDrift"
)

// maxDriftedChildren bounds how many children the Drifted message names.
const maxDriftedChildren = 5

// drifted returns the Drifted condition, and false when the parent is to
// have none: no child drifted now (in.Results' Drifted) nor before. When
// the children did not render (rendered false), their drift is not known,
// and the parent's previous condition is kept as it is.
func drifted(parent *unstructured.Unstructured, in Input, rendered bool) (metav1.Condition, bool) {
	prev := meta.FindStatusCondition(previousConditions(parent), TypeDrifted)
	if !rendered {
		if prev == nil {
			return metav1.Condition{}, false
		}
		return metav1.Condition{Type: TypeDrifted, Status: prev.Status, Reason: prev.Reason, Message: prev.Message}, true
	}
	var lines []string
	for _, r := range in.Results {
		if len(r.Drifted) > 0 {
			lines = append(lines, fmt.Sprintf("%s at %s", r.Ref, fieldList(r.Drifted)))
		}
	}
	switch {
	case len(lines) > 0:
		return metav1.Condition{Type: TypeDrifted, Status: metav1.ConditionTrue, Reason: ReasonChangedByAnotherWriter,
			Message: DriftedMessage(lines)}, true
	case prev != nil:
		return metav1.Condition{Type: TypeDrifted, Status: metav1.ConditionFalse, Reason: ReasonNoDrift,
			Message: "no child has fields changed by another writer"}, true
	}
	return metav1.Condition{}, false
}

// DriftedMessage is the Drifted condition's message for lines, one per
// drifted child ("Deployment.apps default/web at spec.replicas"): the
// first maxDriftedChildren, and how many more there are.
func DriftedMessage(lines []string) string {
	more := ""
	if len(lines) > maxDriftedChildren {
		more = fmt.Sprintf(" (and %d more children)", len(lines)-maxDriftedChildren)
		lines = lines[:maxDriftedChildren]
	}
	return "another writer changed " + strings.Join(lines, "; ") + more +
		"; Loom leaves them as they are (" + object.AnnotationDrift + ": " + object.DriftWarn + ")"
}

// fieldList names up to three fields, and how many more there are.
func fieldList(fields []string) string {
	const most = 3
	if len(fields) <= most {
		return strings.Join(fields, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(fields[:most], ", "), len(fields)-most)
}
