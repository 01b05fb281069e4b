package rbac

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// notOwned merges the line ranges of observed and patched documents: the
// documents whose objects Loom never creates or deletes.
func notOwned(observed, patched map[string][][2]int) map[string][][2]int {
	out := make(map[string][][2]int, len(observed)+len(patched))
	for f, r := range observed {
		out[f] = append(out[f], r...)
	}
	for f, r := range patched {
		out[f] = append(out[f], r...)
	}
	return out
}

// patchedKinds returns the kinds of which some document is patched: Loom
// patches objects of them wherever their lookup declaration may read.
func patchedKinds(children []Kind, patched map[string][][2]int) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, k := range children {
		if slices.ContainsFunc(patched[k.File], func(r [2]int) bool { return k.Line >= r[0] && k.Line <= r[1] }) {
			out[k.GroupKind] = true
		}
	}
	return out
}
