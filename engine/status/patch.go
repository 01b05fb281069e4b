package status

import (
	"fmt"

	"github.com/loom-operator/loom/engine/object"
)

// notOwned reports whether a child of mode is someone else's object,
// which Loom never creates: the parent waits while it does not exist.
func notOwned(mode string) bool {
	return mode == object.ManageObserve || mode == object.ManagePatch
}

// missingMessage is the message of a child of mode (observe or patch)
// that does not exist.
func missingMessage(mode string, ref object.Ref) string {
	if mode != object.ManagePatch {
		return observedMissing(ref)
	}
	name := ref.Name
	if ref.Namespace != "" {
		name = ref.Namespace + "/" + name
	}
	return fmt.Sprintf("waiting for %s %s, which Loom patches (%s: %s) and never creates, to exist",
		ref.GroupKind.Kind, name, object.AnnotationManage, object.ManagePatch)
}
