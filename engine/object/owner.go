package object

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// AnnotationOwner names the parent of a cluster-scoped child of a
// namespaced parent, which no ownerReference can reach (the garbage
// collector refuses a namespaced owner of a cluster-scoped object), and
// of a child placed in a workload cluster (AnnotationCluster), which no
// ownerReference can reach either:
// "<apiVersion>/<kind>/<namespace>/<name>/<uid>", for example
// "example.loom.dev/v1alpha1/MyResource/team-a/web/0b6f...". Loom treats it
// as the child's controller reference; the parent's ApplySet label is
// required beside it, as beside an ownerReference.
const AnnotationOwner = "loom.dev/owner"

// FinalizerClusterChildren is set on a namespaced parent while it has
// cluster-scoped children, and only then: the garbage collector cannot
// delete them with the parent, so Loom deletes them, waits until they are
// gone, and only then removes the finalizer.
const FinalizerClusterChildren = "loom.dev/cluster-children"

// AnnotationClusterKinds, set on a parent with FinalizerClusterChildren,
// lists the group-kinds of its cluster-scoped children (as
// AnnotationOrphanKinds does for children to keep), so that Loom knows
// which kinds to list when the parent is deleted, even after a restart.
const AnnotationClusterKinds = "loom.dev/cluster-kinds"

// FinalizerRemoteChildren is set on a parent while it has children in
// workload clusters (AnnotationCluster), and only then: no garbage
// collector deletes them with the parent, so Loom deletes them, waits
// until they are gone, and only then removes the finalizer.
const FinalizerRemoteChildren = "loom.dev/remote-children"

// AnnotationRemoteClusters, set on a parent with FinalizerRemoteChildren,
// lists the workload clusters it has children in (comma-separated names,
// sorted), so that Loom knows where to delete them when the parent is
// deleted, even after a restart.
const AnnotationRemoteClusters = "loom.dev/remote-clusters"

// AnnotationAbandonClusterChildren, set on a deleted parent by an admin,
// names the workload clusters (comma-separated) whose registration is gone
// and whose children Loom is to leave there, so that the parent can go: it
// is the way out when a cluster's credentials were deleted for good.
const AnnotationAbandonClusterChildren = "loom.dev/abandon-cluster-children"

// FormatOwner returns the AnnotationOwner value naming ref, an owner in
// namespace.
func FormatOwner(ref metav1.OwnerReference, namespace string) string {
	return strings.Join([]string{ref.APIVersion, ref.Kind, namespace, ref.Name, string(ref.UID)}, "/")
}

// ParseOwner reads an AnnotationOwner value: the owner as a controller
// reference, and its namespace. ok is false for anything FormatOwner does
// not write.
func ParseOwner(s string) (ref metav1.OwnerReference, namespace string, ok bool) {
	parts := strings.Split(s, "/")
	var apiVersion string
	switch len(parts) {
	case 5: // a core kind: v1/Kind/ns/name/uid
		apiVersion = parts[0]
	case 6:
		apiVersion = parts[0] + "/" + parts[1]
		parts = parts[1:]
	default:
		return ref, "", false
	}
	kind, namespace, name, uid := parts[1], parts[2], parts[3], parts[4]
	if apiVersion == "" || strings.HasPrefix(apiVersion, "/") || strings.HasSuffix(apiVersion, "/") ||
		kind == "" || namespace == "" || name == "" || uid == "" {
		return ref, "", false
	}
	t := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &t}, namespace, true
}

// OwnerOf returns obj's controller: its controller ownerReference and
// obj's namespace, or, when it has none and is cluster-scoped (no
// namespace) or placed in a workload cluster, the owner its
// AnnotationOwner names and that owner's namespace (see ControllerOf). It
// returns nil when obj has neither: on a local namespaced object the
// annotation means nothing, since an ownerReference can reach its parent.
func OwnerOf(obj *unstructured.Unstructured) (*metav1.OwnerReference, string) {
	return ControllerOf(metav1.GetControllerOfNoCopy(obj), obj.GetNamespace(), func(key string) (string, bool) {
		v, ok := obj.GetAnnotations()[key]
		return v, ok
	})
}

// ControllerOf is OwnerOf's decision for an object in any form (an
// Unstructured, or the informers' packed JSON): controller is the
// object's controller ownerReference or nil, namespace its namespace, and
// annotation looks up one of its annotations. annotation is called only
// when the decision needs it: for a cluster-scoped object without a
// controller reference.
//
// A namespaced object without a controller reference has the owner its
// AnnotationOwner names only when it is placed in a workload cluster (a
// non-empty AnnotationCluster), where no ownerReference can reach its
// parent, and only an owner of its own namespace, as an ownerReference
// would be.
func ControllerOf(controller *metav1.OwnerReference, namespace string, annotation func(key string) (string, bool)) (*metav1.OwnerReference, string) {
	if controller != nil {
		return controller, namespace
	}
	if namespace == "" {
		return parseAnnotatedOwner(annotation(AnnotationOwner))
	}
	if cl, _ := annotation(AnnotationCluster); cl == "" {
		return nil, ""
	}
	if ref, ns := parseAnnotatedOwner(annotation(AnnotationOwner)); ref != nil && ns == namespace {
		return ref, ns
	}
	return nil, ""
}

// AnnotatedOwner returns the owner that annotations' AnnotationOwner
// names, and its namespace, or nil.
func AnnotatedOwner(annotations map[string]string) (*metav1.OwnerReference, string) {
	v, ok := annotations[AnnotationOwner]
	return parseAnnotatedOwner(v, ok)
}

// parseAnnotatedOwner reads v, an AnnotationOwner value, if ok: the owner
// it names and its namespace, or nil.
func parseAnnotatedOwner(v string, ok bool) (*metav1.OwnerReference, string) {
	if !ok {
		return nil, ""
	}
	ref, ns, ok := ParseOwner(v)
	if !ok {
		return nil, ""
	}
	return &ref, ns
}

// ClusterScopedChildError means a template rendered a cluster-scoped
// object for a namespaced parent whose set does not declare its kind in
// loom.yaml's clusterScoped.
type ClusterScopedChildError struct {
	Kind, Group string
}

// Error names the kind and how to allow it.
func (e *ClusterScopedChildError) Error() string {
	k := e.Kind
	if e.Group != "" {
		k += "." + e.Group
	}
	return fmt.Sprintf("%s is cluster-scoped: a namespaced parent cannot own it unless its set declares the kind in loom.yaml's clusterScoped", k)
}
