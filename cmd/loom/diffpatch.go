package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// patchStep says what Loom does with a patch child (loom.dev/manage:
// patch), tagged tag, whose object is before (nil: none): one that does
// not exist is never created, and the parent waits for it; one that does
// is diffed as an apply of the template's fields (done=false), which
// never creates or deletes it.
func (d *differ) patchStep(tag string, before *unstructured.Unstructured) (count int, done bool) {
	if before == nil {
		fmt.Fprintf(d.out, "%s: does not exist; Loom never creates an object it patches, and the parent waits for it\n", tag)
		return countUnchanged, true
	}
	fmt.Fprintf(d.out, "%s: someone else's object; Loom applies only the template's fields to it, and never creates or deletes it\n", tag)
	return 0, false
}
