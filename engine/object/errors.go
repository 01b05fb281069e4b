package object

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AnnotationAdopt, set on an existing object to "<Kind>.<group>/<name>" of
// a parent (such as "MyResource.example.loom.dev/web"; "<Kind>/<name>" for
// a core kind), hands that object over to the parent: Loom adopts it when
// the parent renders a child of the same kind, namespace and name. Like
// Helm's meta.helm.sh/release-name, it is the explicit consent of someone
// allowed to write the object. A cluster-scoped object, handed to a
// namespaced parent, names the parent's namespace too:
// "<Kind>.<group>/<namespace>/<name>".
const AnnotationAdopt = "loom.dev/adopt"

// AdoptValue is the AnnotationAdopt value that hands an object to the
// parent that owner refers to.
func AdoptValue(owner metav1.OwnerReference) string {
	return GroupKindOf(owner).String() + "/" + owner.Name
}

// AdoptValueIn is AdoptValue for an object outside the parent's namespace
// (a cluster-scoped object): it names the parent's namespace, so that a
// parent of the same name in another namespace cannot adopt the object.
// namespace "" gives AdoptValue.
func AdoptValueIn(owner metav1.OwnerReference, namespace string) string {
	if namespace == "" {
		return AdoptValue(owner)
	}
	return GroupKindOf(owner).String() + "/" + namespace + "/" + owner.Name
}

// named returns "name", or "namespace/name" when namespace is set.
func named(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// GroupKindOf returns the group and kind an ownerReference names, whatever the
// version.
func GroupKindOf(ref metav1.OwnerReference) schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
}

// OwnedByAnotherError means a child's name is taken by an object that
// another controller owns. Loom does not take it over.
type OwnedByAnotherError struct {
	Ref Ref
	// Owner is the object's controller; Want is the parent that renders it.
	Owner, Want metav1.OwnerReference
	// OwnerNamespace and WantNamespace are their namespaces, set for a
	// cluster-scoped object (whose owners are in some namespace).
	OwnerNamespace, WantNamespace string
	// Err is the API server's refusal, or nil when Loom saw the owner
	// before sending anything.
	Err error
}

// Error explains the conflict and what to do about it.
func (e *OwnedByAnotherError) Error() string {
	return fmt.Sprintf("%s is controlled by %s %s, not by %s %s; Loom does not take over another controller's object: "+
		"rename the child in the template, or delete the object or its ownerReference",
		e.Ref, e.Owner.Kind, named(e.OwnerNamespace, e.Owner.Name), e.Want.Kind, named(e.WantNamespace, e.Want.Name))
}

// Unwrap returns the API server's error, if any.
func (e *OwnedByAnotherError) Unwrap() error { return e.Err }

// NotAdoptedError means a child's name is taken by an object that exists
// without being Loom's: no controller owns it, it does not carry the
// parent's ApplySet label, and nobody annotated it for adoption. Loom does
// not take it over, because whoever may create a parent could otherwise
// seize (and, with the parent, delete) any object in its namespace.
type NotAdoptedError struct {
	Ref Ref
	// Want is the parent that renders the child.
	Want metav1.OwnerReference
	// WantNamespace is the parent's namespace when the object is
	// cluster-scoped, and "" otherwise.
	WantNamespace string
}

// Error explains the refusal and the two ways out.
func (e *NotAdoptedError) Error() string {
	return fmt.Sprintf("%s already exists and is not managed by Loom; Loom does not take over an object it did not create: "+
		"rename the child in the template, or hand the object over with the annotation %s=%s",
		e.Ref, AnnotationAdopt, AdoptValueIn(e.Want, e.WantNamespace))
}
