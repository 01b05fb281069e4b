package status

import (
	"fmt"

	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// modeOf is a rendered child's mode as status.children names it: "" for
// full, so that an entry says its mode only when it is not the default
// (and a parent's status is unchanged by Loom versions that know modes).
func modeOf(obj *unstructured.Unstructured) string {
	if m := object.ManageOf(obj.GetAnnotations(), ""); m != object.ManageFull {
		return m
	}
	return ""
}

// observedMissing is the message of an observed child that does not
// exist: the parent waits for someone else to create it.
func observedMissing(ref object.Ref) string {
	name := ref.Name
	if ref.Namespace != "" {
		name = ref.Namespace + "/" + name
	}
	return fmt.Sprintf("waiting for %s %s, which Loom observes (%s: %s) and never creates, to exist",
		ref.GroupKind.Kind, name, object.AnnotationManage, object.ManageObserve)
}
