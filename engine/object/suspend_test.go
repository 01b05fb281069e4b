package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSuspensionOf(t *testing.T) {
	on := map[string]string{AnnotationSuspend: "true"}
	for _, tc := range []struct {
		name         string
		ann          map[string]string
		setSuspended bool
		want         *Suspension
	}{
		{"neither", nil, false, nil},
		{"an annotation other than true", map[string]string{AnnotationSuspend: "yes"}, false, nil},
		{"the parent's annotation", on, false, &Suspension{Reason: ReasonSuspendedByAnnotation,
			Message: `the parent's annotation loom.dev/suspend is "true": Loom writes none of its children until it is removed (loom resume)`}},
		{"the TemplateSet", nil, true, &Suspension{Reason: ReasonSuspendedByTemplateSet,
			Message: "spec.suspend of TemplateSet web is true: Loom writes none of the set's children until it is cleared (loom resume --set web)"}},
		{"both: the annotation first, and both named", on, true, &Suspension{Reason: ReasonSuspendedByAnnotation,
			Message: `the parent's annotation loom.dev/suspend is "true", and so is spec.suspend of TemplateSet web: Loom writes none of its children until both are removed (loom resume)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SuspensionOf(tc.ann, "web", tc.setSuspended)); diff != "" {
				t.Errorf("SuspensionOf (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSetSuspension: loom.yaml's suspend suspends every parent of any set,
// one with a rollout policy (and so a TemplateSet) or not.
func TestSetSuspension(t *testing.T) {
	want := &Suspension{Reason: ReasonSuspendedBySet,
		Message: "suspend is true in loom.yaml of set web: Loom writes none of the set's children until it is removed there"}
	if diff := cmp.Diff(want, SetSuspension("web")); diff != "" {
		t.Errorf("SetSuspension (-want +got):\n%s", diff)
	}
}
