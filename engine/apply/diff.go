package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// AnnotationApplied holds a hash of the desired object Loom last applied.
const AnnotationApplied = "loom.dev/applied"

// Hash returns a short, stable hash of a desired object.
func Hash(desired *unstructured.Unstructured) (string, error) {
	b, err := json.Marshal(desired.Object) // encoding/json sorts map keys
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// withHash returns a copy of desired that carries its hash.
func withHash(desired *unstructured.Unstructured, hash string) *unstructured.Unstructured {
	out := desired.DeepCopy()
	ann := out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationApplied] = hash
	out.SetAnnotations(ann)
	return out
}

// Project returns the values of live at the paths that desired sets: a tree
// of desired's shape holding live's values. Lists whose items all have a
// name are matched by name, like Kubernetes' associative lists, so items
// that other writers add (an injected sidecar) are not part of the
// projection; other lists are matched by position. Paths missing in live
// are left out.
func Project(desired, live any) any {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live
		}
		out := make(map[string]any, len(d))
		for k, dv := range d {
			if lv, ok := l[k]; ok {
				out[k] = Project(dv, lv)
			}
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok {
			return live
		}
		if byName := indexByName(l); byName != nil && allNamed(d) {
			out := make([]any, 0, len(d))
			for _, dv := range d {
				if lv, ok := byName[dv.(map[string]any)["name"].(string)]; ok {
					out = append(out, Project(dv, lv))
				}
			}
			return out
		}
		out := make([]any, len(l))
		for i, lv := range l {
			if i < len(d) {
				out[i] = Project(d[i], lv)
			} else {
				out[i] = lv
			}
		}
		return out
	default:
		return live
	}
}

// Matches reports whether live already holds every value desired sets. It
// tolerates the API server's normalisations that it knows of: a quantity
// written in another form ("1024Mi" and "1Gi"), and an empty map or list
// that the server drops.
func Matches(desired, live any) bool {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live == nil && isEmpty(d)
		}
		for k, dv := range d {
			lv, ok := l[k]
			if !ok {
				if isEmpty(dv) {
					continue
				}
				return false
			}
			if !Matches(dv, lv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return live == nil && len(d) == 0
		}
		if byName := indexByName(l); byName != nil && allNamed(d) {
			if len(byName) < len(d) {
				return false
			}
			for _, dv := range d {
				lv, ok := byName[dv.(map[string]any)["name"].(string)]
				if !ok || !Matches(dv, lv) {
					return false
				}
			}
			return true
		}
		if len(d) != len(l) {
			return false
		}
		for i := range d {
			if !Matches(d[i], l[i]) {
				return false
			}
		}
		return true
	case string:
		if l, ok := live.(string); ok && l != d {
			return sameQuantity(d, l)
		}
		return equality.Semantic.DeepEqual(desired, live)
	case nil:
		return live == nil
	default:
		return equality.Semantic.DeepEqual(desired, live)
	}
}

// isEmpty reports whether v is nil, an empty list, or a map that holds
// only empty values: what the API server drops from an object.
func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, x := range t {
			if !isEmpty(x) {
				return false
			}
		}
		return true
	case []any:
		return len(t) == 0
	}
	return false
}

func sameQuantity(a, b string) bool {
	qa, err := resource.ParseQuantity(a)
	if err != nil {
		return false
	}
	qb, err := resource.ParseQuantity(b)
	return err == nil && qa.Cmp(qb) == 0
}

// allNamed reports whether every item is a map with a string name.
func allNamed(items []any) bool {
	if len(items) == 0 {
		return false
	}
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m["name"].(string); !ok {
			return false
		}
	}
	return true
}

// indexByName indexes items by name, or returns nil when they are not all
// uniquely named.
func indexByName(items []any) map[string]any {
	if !allNamed(items) {
		return nil
	}
	out := make(map[string]any, len(items))
	for _, it := range items {
		name := it.(map[string]any)["name"].(string)
		if _, dup := out[name]; dup {
			return nil
		}
		out[name] = it
	}
	return out
}
