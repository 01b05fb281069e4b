package object

import "fmt"

// The reasons of a parent's Suspended condition: where its suspension
// comes from.
const (
	// ReasonSuspendedByAnnotation: the parent carries AnnotationSuspend.
	ReasonSuspendedByAnnotation = "SuspendedByAnnotation"
	// ReasonSuspendedByTemplateSet: the set's TemplateSet has
	// spec.suspend true.
	ReasonSuspendedByTemplateSet = "SuspendedByTemplateSet"
	// ReasonSuspendedBySet: the set's loom.yaml says suspend: true.
	ReasonSuspendedBySet = "SuspendedBySet"
)

// Suspension says why a parent is suspended: Loom writes none of its
// children (no apply, create, prune, release, finalizer change, hook,
// seed or key) and only reads them and writes its status.
type Suspension struct {
	// Reason is ReasonSuspendedByAnnotation or ReasonSuspendedByTemplateSet.
	Reason string
	// Message names where the suspension comes from, and how to resume.
	Message string
}

// SuspensionOf decides whether a parent whose annotations are given is
// suspended, in a set whose TemplateSet (named templateSet) has
// spec.suspend setSuspended. The parent's annotation is named first when
// both suspend it: removing it alone would not resume the parent, and the
// message says so. nil means not suspended.
func SuspensionOf(annotations map[string]string, templateSet string, setSuspended bool) *Suspension {
	byParent := IsSuspended(annotations)
	switch {
	case byParent && setSuspended:
		return &Suspension{Reason: ReasonSuspendedByAnnotation, Message: fmt.Sprintf(
			"the parent's annotation %s is \"true\", and so is spec.suspend of TemplateSet %s: Loom writes none of its children until both are removed (loom resume)",
			AnnotationSuspend, templateSet)}
	case byParent:
		return &Suspension{Reason: ReasonSuspendedByAnnotation, Message: fmt.Sprintf(
			"the parent's annotation %s is \"true\": Loom writes none of its children until it is removed (loom resume)", AnnotationSuspend)}
	case setSuspended:
		return &Suspension{Reason: ReasonSuspendedByTemplateSet, Message: fmt.Sprintf(
			"spec.suspend of TemplateSet %s is true: Loom writes none of the set's children until it is cleared (loom resume --set %s)",
			templateSet, templateSet)}
	}
	return nil
}

// SetSuspension is the suspension of every parent of the set named set
// (its folder's name) whose loom.yaml says suspend: true. A parent's
// annotation and its TemplateSet (SuspensionOf) are named before it.
func SetSuspension(set string) *Suspension {
	return &Suspension{Reason: ReasonSuspendedBySet, Message: fmt.Sprintf(
		"suspend is true in loom.yaml of set %s: Loom writes none of the set's children until it is removed there", set)}
}
