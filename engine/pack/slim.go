package pack

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// fieldsKey holds, in a slimmed object, the Fingerprint of its manager's
// managedFields entry, computed before the entry was dropped.
const fieldsKey = "loom.dev/fields"

// slimMetadata are the metadata fields a slimmed object keeps: its
// identity, its owners, its labels (adoption reads the ApplySet label), its
// generation (readiness reads it) and whether it is being deleted.
var slimMetadata = []string{
	"name", "namespace", "uid", "resourceVersion", "generation",
	"deletionTimestamp", "labels", "ownerReferences",
}

// slimSpec are the spec fields a slimmed object keeps: those kstatus reads
// to judge the built-in kinds (Deployment, StatefulSet, ReplicaSet,
// DaemonSet, Job, Service). Everything else in spec is what Loom applied,
// which Loom knows from its templates.
var slimSpec = []string{
	"replicas", "updateStrategy", "progressDeadlineSeconds", "parallelism", "completions", "type", "clusterIP",
}

// Slim returns the part of obj that Loom's decisions read, for an informer
// cache to keep instead of the whole object:
//
//   - apiVersion, kind, and the metadata in slimMetadata;
//   - the annotations under loom.dev/ (the applied hash, the adoption
//     consent), not others (kubectl's last-applied copy can be the
//     object's size again);
//   - the spec fields kstatus reads (slimSpec), and the whole status;
//   - the Fingerprint of manager's managedFields entry, instead of
//     managedFields, which are often half of an object's size.
//
// That is all that apply's "nothing changed" and adoption decisions,
// readiness (kstatus and loom.yaml rules) and prune read. The result shares
// the kept values with obj: a cache packs it (Pack) before obj is dropped.
// Slim of a slimmed object returns it unchanged.
func Slim(obj *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	if _, done := obj.Object[fieldsKey]; done {
		return obj
	}
	out := map[string]any{fieldsKey: Fingerprint(obj, manager)}
	for _, k := range []string{"apiVersion", "kind", "status"} {
		if v, ok := obj.Object[k]; ok {
			out[k] = v
		}
	}
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(slimMetadata)+1)
		for _, k := range slimMetadata {
			if v, ok := md[k]; ok {
				m[k] = v
			}
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			var keep map[string]any
			for k, v := range ann {
				if strings.HasPrefix(k, "loom.dev/") {
					if keep == nil {
						keep = map[string]any{}
					}
					keep[k] = v
				}
			}
			if keep != nil {
				m["annotations"] = keep
			}
		}
		out["metadata"] = m
	}
	if spec, ok := obj.Object["spec"].(map[string]any); ok {
		var keep map[string]any
		for _, k := range slimSpec {
			if v, ok := spec[k]; ok {
				if keep == nil {
					keep = map[string]any{}
				}
				keep[k] = v
			}
		}
		if keep != nil {
			out["spec"] = keep
		}
	}
	return &unstructured.Unstructured{Object: out}
}

// IsSlim reports whether obj is a slimmed object, which carries the
// fingerprint of Loom's managedFields entry but not the entry.
func IsSlim(obj *unstructured.Unstructured) bool {
	_, ok := obj.Object[fieldsKey]
	return ok
}
