package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

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
	_, ok := mismatch(desired, live)
	return ok
}

// Mismatch is Matches that also says where: the path of the first value
// desired sets that live does not hold, such as
// "spec.template.spec.containers[name=app].image". The path is empty when
// they match, or when live is not even of desired's type at the top.
func Mismatch(desired, live any) (path string, ok bool) {
	rev, ok := mismatch(desired, live)
	var b strings.Builder
	for i := len(rev) - 1; i >= 0; i-- {
		if b.Len() > 0 && !strings.HasPrefix(rev[i], "[") {
			b.WriteByte('.')
		}
		b.WriteString(rev[i])
	}
	return b.String(), ok
}

// mismatch returns the path of the first mismatch, innermost segment first,
// so that a match allocates nothing.
func mismatch(desired, live any) ([]string, bool) {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return nil, live == nil && isEmpty(d)
		}
		for k, dv := range d {
			lv, ok := l[k]
			if !ok {
				if isEmpty(dv) {
					continue
				}
				return []string{k}, false
			}
			if rev, ok := mismatch(dv, lv); !ok {
				return append(rev, k), false
			}
		}
		return nil, true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return nil, live == nil && len(d) == 0
		}
		if byName := indexByName(l); byName != nil && allNamed(d) {
			if len(byName) < len(d) {
				return nil, false
			}
			for _, dv := range d {
				name := dv.(map[string]any)["name"].(string)
				lv, ok := byName[name]
				if !ok {
					return []string{"[name=" + name + "]"}, false
				}
				if rev, ok := mismatch(dv, lv); !ok {
					return append(rev, "[name="+name+"]"), false
				}
			}
			return nil, true
		}
		if len(d) != len(l) {
			return nil, false
		}
		for i := range d {
			if rev, ok := mismatch(d[i], l[i]); !ok {
				return append(rev, "["+strconv.Itoa(i)+"]"), false
			}
		}
		return nil, true
	case string:
		if l, ok := live.(string); ok && l != d {
			return nil, sameQuantity(d, l)
		}
		return nil, equality.Semantic.DeepEqual(desired, live)
	case nil:
		return nil, live == nil
	default:
		return nil, equality.Semantic.DeepEqual(desired, live)
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
