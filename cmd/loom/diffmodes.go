package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/object"
)

// The counts loom diff keeps per parent, by index.
const (
	countCreate = iota
	countChange
	countUnchanged
	countPrune
	countOrphan
)

// byMode says what Loom does with a child whose mode (loom.dev/manage) is
// not full, the step the controller takes (apply.Decide) from before, the
// live object (nil: none), for the parent with UID parent. It returns the
// count the child adds to, and done=false when the child is to be diffed
// as an apply (a full child, or a create-only child to create, which it
// announces first).
func (d *differ) byMode(child, before *unstructured.Unstructured, parent types.UID) (count int, done bool) {
	mode := object.ManageOf(child.GetAnnotations(), "")
	ref := object.RefOf(child)
	tag := fmt.Sprintf("%s (%s: %s)", ref, object.AnnotationManage, mode)
	switch apply.Decide(mode, before, parent) {
	case apply.StepCreate:
		fmt.Fprintf(d.out, "%s: missing, so Loom creates it; it never updates it\n", tag)
		return 0, false
	case apply.StepKeep:
		fmt.Fprintf(d.out, "%s: exists, so Loom leaves it as it is\n", tag)
		return countUnchanged, true
	case apply.StepRelease:
		fmt.Fprintf(d.out, "%s: still Loom's child, so Loom releases it (its ownerReference, Loom's labels and field manager go; its fields stay), then only reads it\n", tag)
		return countOrphan, true
	case apply.StepRead:
		if before == nil {
			fmt.Fprintf(d.out, "%s: does not exist; Loom never creates it, and the parent waits for it\n", tag)
		} else {
			fmt.Fprintf(d.out, "%s: exists; Loom reads it and never writes it\n", tag)
		}
		return countUnchanged, true
	case apply.StepPatch:
		return d.patchStep(tag, before)
	}
	return 0, false
}
