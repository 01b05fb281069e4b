package object

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// AnnotationDeletePolicy, set on a child in its template, says what
// becomes of the child when it stops rendering or when its parent is
// deleted: DeletePolicyDelete (the default) deletes it; DeletePolicyOrphan
// keeps it, released from Loom (see Orphaned). The name and the values
// follow Kubernetes' own propagationPolicy (Orphan) and kro's proposed
// per-resource deletionPolicy, the way Helm's helm.sh/resource-policy:
// keep and Flux's kustomize.toolkit.fluxcd.io/prune: disabled mark an
// object to keep. Unlike Helm, any other value is a template error, not a
// silent keep: a typo must not decide a deletion.
const AnnotationDeletePolicy = "loom.dev/delete-policy"

// The values of AnnotationDeletePolicy.
const (
	DeletePolicyDelete = "delete"
	DeletePolicyOrphan = "orphan"
)

// FinalizerOrphan is set on a parent while it has children to keep
// (DeletePolicyOrphan), and only then: when the parent is deleted, Loom
// releases those children before it removes the finalizer, so the garbage
// collector never sees them owned by a parent that is gone.
const FinalizerOrphan = "loom.dev/orphan"

// AnnotationOrphanKinds, set on a parent with FinalizerOrphan, lists the
// group-kinds ("PersistentVolumeClaim,Certificate.cert-manager.io") of the
// children to keep, so that Loom knows exactly which kinds to list when the
// parent is deleted, even after a restart with no cache.
const AnnotationOrphanKinds = "loom.dev/orphan-kinds"

// CheckDeletePolicy returns an error unless v is a value of
// AnnotationDeletePolicy.
func CheckDeletePolicy(v string) error {
	if v == DeletePolicyDelete || v == DeletePolicyOrphan {
		return nil
	}
	return fmt.Errorf("annotation %s is %q; it must be %q or %q", AnnotationDeletePolicy, v, DeletePolicyOrphan, DeletePolicyDelete)
}

// IsOrphan reports whether annotations (a child's) ask to keep the child.
func IsOrphan(annotations map[string]string) bool {
	return annotations[AnnotationDeletePolicy] == DeletePolicyOrphan
}

// FormatGroupKinds returns the AnnotationOrphanKinds value of kinds:
// sorted, without duplicates, comma-separated.
func FormatGroupKinds(kinds []schema.GroupKind) string {
	seen := make(map[string]bool, len(kinds))
	out := make([]string, 0, len(kinds))
	for _, gk := range kinds {
		if s := gk.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// ParseGroupKinds reads an AnnotationOrphanKinds value.
func ParseGroupKinds(v string) []schema.GroupKind {
	var out []schema.GroupKind
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, schema.ParseGroupKind(s))
		}
	}
	return out
}

// AddNamespaceOwner adds to obj, a namespaced child to keep, an
// ownerReference to its Namespace, whose UID is uid (not as controller:
// the parent stays obj's controller), unless it has one. The garbage
// collector deletes an object only when none of its owners exists any
// more (but owners themselves being deleted with their dependents); the
// Namespace outlives every object in it, so the collector never deletes
// obj with its parent, in any propagation mode, and only drops its
// reference to the parent. Loom adds it when it applies such a child, and
// loom diff when it compares one.
func AddNamespaceOwner(obj *unstructured.Unstructured, uid types.UID) {
	refs := obj.GetOwnerReferences()
	for _, r := range refs {
		if r.UID == uid {
			return
		}
	}
	obj.SetOwnerReferences(append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: obj.GetNamespace(), UID: uid}))
}
