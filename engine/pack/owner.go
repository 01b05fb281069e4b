package pack

import (
	"github.com/loom-operator/loom/engine/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Owner returns the object's controller and that controller's namespace:
// its controller ownerReference (and its own namespace), or, when it has
// none and no namespace, the parent its object.AnnotationOwner names (a
// cluster-scoped child of a namespaced parent, or a child placed in a
// workload cluster): object.OwnerOf's decision (object.ControllerOf). It
// returns nil when the object has neither. Only an object without a
// controller reference costs a scan of its JSON.
func (p *Packed) Owner() (*metav1.OwnerReference, string) {
	return object.ControllerOf(p.Controller(), p.namespace, p.annotation)
}

// OwnerUID returns the UID of the object's controller (see Owner), or "".
func (p *Packed) OwnerUID() types.UID {
	if p.owner.uid != "" {
		return p.owner.uid
	}
	if ref, _ := p.Owner(); ref != nil {
		return ref.UID
	}
	return ""
}

// annotation returns the value of the annotation key in the packed JSON.
func (p *Packed) annotation(key string) (string, bool) {
	var out string
	var found bool
	_, _ = eachMember(p.raw, func(k, _, val []byte) error {
		if string(k) != "metadata" {
			return nil
		}
		_, _ = eachMember(val, func(k, _, val []byte) error {
			if string(k) != "annotations" {
				return nil
			}
			_, _ = eachMember(val, func(k, _, val []byte) error {
				if string(k) == key {
					out, found = jsonString(val)
				}
				return nil
			})
			return nil
		})
		return nil
	})
	return out, found
}
