package object

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AnnotationPatches, set by Loom on a parent with FinalizerPatches, lists
// the objects it patches for that parent (its ManagePatch children), as
// FormatPatchTargets writes them: when one stops rendering, or the parent
// is deleted, Loom gives its fields in them back, even after a restart.
const AnnotationPatches = "loom.dev/patches"

// FinalizerPatches keeps a parent whose AnnotationPatches lists objects
// until Loom has given its fields in them back.
const FinalizerPatches = "loom.dev/patches"

// MaxPatchTargets bounds the objects one parent may patch, and so the
// size of its AnnotationPatches.
const MaxPatchTargets = 64

// FormatPatchTargets returns the AnnotationPatches value of refs: each as
// Kind[.group]/namespace/name (no namespace for a cluster-scoped object),
// sorted, without duplicates, comma-separated. Names and namespaces hold
// neither '/' nor ','.
func FormatPatchTargets(refs []Ref) string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.GroupKind.String()+"/"+r.Namespace+"/"+r.Name)
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ",")
}

// ParsePatchTargets reads an AnnotationPatches value; an entry that is not
// Kind[.group]/namespace/name is an error, and so are more than
// MaxPatchTargets entries.
func ParsePatchTargets(v string) ([]Ref, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	if len(parts) > MaxPatchTargets {
		return nil, fmt.Errorf("%s lists %d objects, more than %d", AnnotationPatches, len(parts), MaxPatchTargets)
	}
	out := make([]Ref, 0, len(parts))
	for _, p := range parts {
		f := strings.Split(strings.TrimSpace(p), "/")
		if len(f) != 3 || f[0] == "" || f[2] == "" {
			return nil, fmt.Errorf("%s: %q is not Kind[.group]/namespace/name", AnnotationPatches, p)
		}
		out = append(out, Ref{GroupKind: schema.ParseGroupKind(f[0]), Namespace: f[1], Name: f[2]})
	}
	return out, nil
}
