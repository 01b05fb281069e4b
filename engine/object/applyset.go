package object

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ApplySetID returns the KEP-3659 ApplySet ID of a parent:
// applyset-<base64url(sha256(name.namespace.kind.group))>-v1.
func ApplySetID(name, namespace, kind, group string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{name, namespace, kind, group}, ".")))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

// ParentApplySetID returns the ApplySet ID of parent (see ApplySetID): the
// value of LabelPartOf on each of its children.
func ParentApplySetID(parent *unstructured.Unstructured) string {
	gvk := parent.GroupVersionKind()
	return ApplySetID(parent.GetName(), parent.GetNamespace(), gvk.Kind, gvk.Group)
}

// ChildSelector is the label selector that matches the children rendered
// for parent (and, if another tool mislabels objects, a few more: check
// each with IsChildOf).
func ChildSelector(parent *unstructured.Unstructured) string {
	return LabelPartOf + "=" + ParentApplySetID(parent)
}

// IsChildOf reports whether obj carries the marks render injects into a
// child of parent: a controller reference to that very object (its UID),
// as an ownerReference or, on a cluster-scoped child of a namespaced
// parent, as AnnotationOwner, and the parent's ApplySet label.
// Prune deletes only such objects.
func IsChildOf(obj, parent *unstructured.Unstructured) bool {
	ref, _ := OwnerOf(obj)
	return ref != nil && ref.UID == parent.GetUID() && obj.GetLabels()[LabelPartOf] == ParentApplySetID(parent)
}
