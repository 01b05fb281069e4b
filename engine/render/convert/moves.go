package convert

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loom-operator/loom/engine/config"
)

// movesUp applies a version's moves, in order, to obj: from the version
// to the hub.
func movesUp(obj map[string]any, moves []config.Move) error {
	for i, m := range moves {
		var err error
		switch {
		case m.Rename != nil:
			move(obj, m.Rename.From, m.Rename.To)
		case m.Split != nil:
			err = split(obj, m.Split.From, m.Split.Into, m.Split.Separator, m.Split.Last, m.Split.Keep)
		case m.Join != nil:
			err = join(obj, m.Join.From, m.Join.To, m.Join.Separator)
		case m.Default != nil:
			if _, ok := get(obj, m.Default.Path); !ok {
				set(obj, m.Default.Path, runtime.DeepCopyJSONValue(jsonValue(m.Default.Value)))
			}
		}
		if err != nil {
			return fmt.Errorf("moves[%d]: %w", i, err)
		}
	}
	return nil
}

// movesDown applies the inverses of a version's moves, in reverse order,
// to obj: from the hub to the version. A default has no inverse: the
// version's schema prunes the field, and the conversion data keeps it.
func movesDown(obj map[string]any, moves []config.Move) error {
	for i := len(moves) - 1; i >= 0; i-- {
		m := moves[i]
		var err error
		switch {
		case m.Rename != nil:
			move(obj, m.Rename.To, m.Rename.From)
		case m.Split != nil:
			err = join(obj, m.Split.Into, m.Split.From, m.Split.Separator)
		case m.Join != nil:
			err = split(obj, m.Join.To, m.Join.From, m.Join.Separator, m.Join.Last, m.Join.Keep)
		}
		if err != nil {
			return fmt.Errorf("moves[%d], the way back: %w", i, err)
		}
	}
	return nil
}

// move moves the value at from, if any, to to.
func move(obj map[string]any, from, to string) {
	if v, ok := get(obj, from); ok {
		del(obj, from)
		set(obj, to, v)
	}
}

// split cuts the string at from into the paths into.
func split(obj map[string]any, from string, into []string, sep string, last bool, keep string) error {
	v, ok := get(obj, from)
	if !ok {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("split %s: want a string, got %T", from, v)
	}
	del(obj, from)
	for i, part := range cut(s, sep, len(into), last, keep) {
		set(obj, into[i], part)
	}
	return nil
}

// join joins the strings at from into one at to. It joins the parts up
// to the first missing one; a part after a gap cannot be joined, and is
// left to the conversion data.
func join(obj map[string]any, from []string, to, sep string) error {
	var parts []string
	gap := false
	for _, p := range from {
		v, ok := get(obj, p)
		if !ok {
			gap = true
			continue
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("join %s: want a string, got %T", p, v)
		}
		if !gap {
			parts = append(parts, s)
		}
	}
	for _, p := range from {
		del(obj, p)
		// An object that held no part is not the string's either.
		if i := strings.LastIndex(p, "."); strings.Contains(p[:i], ".") {
			if m, ok := get(obj, p[:i]); ok {
				if m, ok := m.(map[string]any); ok && len(m) == 0 {
					del(obj, p[:i])
				}
			}
		}
	}
	if len(parts) > 0 {
		set(obj, to, strings.Join(parts, sep))
	}
	return nil
}

// cut cuts s at up to n-1 separators: its first ones, or its last ones
// when last is true. It does not cut where the part cut off (after the
// separator with last, before it without) would hold a character of keep.
// Joining the parts with sep gives s back.
func cut(s, sep string, n int, last bool, keep string) []string {
	var parts []string
	rest := s
	for len(parts) < n-1 {
		if last {
			i := strings.LastIndex(rest, sep)
			if i < 0 || strings.ContainsAny(rest[i+len(sep):], keep) {
				break
			}
			parts = append([]string{rest[i+len(sep):]}, parts...)
			rest = rest[:i]
			continue
		}
		i := strings.Index(rest, sep)
		if i < 0 || strings.ContainsAny(rest[:i], keep) {
			break
		}
		parts = append(parts, rest[:i])
		rest = rest[i+len(sep):]
	}
	if last {
		return append([]string{rest}, parts...)
	}
	return append(parts, rest)
}

// get returns the value at a dotted path.
func get(obj map[string]any, path string) (any, bool) {
	var cur any = obj
	for _, f := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[f]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// set puts v at a dotted path, making the objects on the way (and
// replacing a value that is not one: the conversion data keeps it).
func set(obj map[string]any, path string, v any) {
	fields := strings.Split(path, ".")
	cur := obj
	for _, f := range fields[:len(fields)-1] {
		next, ok := cur[f].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[f] = next
		}
		cur = next
	}
	cur[fields[len(fields)-1]] = v
}

// del removes the value at a dotted path, and the objects below spec or
// status that it leaves empty.
func del(obj map[string]any, path string) {
	fields := strings.Split(path, ".")
	chain := []map[string]any{obj}
	for _, f := range fields[:len(fields)-1] {
		next, ok := chain[len(chain)-1][f].(map[string]any)
		if !ok {
			return
		}
		chain = append(chain, next)
	}
	delete(chain[len(chain)-1], fields[len(fields)-1])
	for i := len(chain) - 1; i >= 2 && len(chain[i]) == 0; i-- {
		delete(chain[i-1], fields[i-1])
	}
}

// jsonValue returns v as JSON decodes it (loom.yaml's YAML may give other
// number types).
func jsonValue(v any) any {
	switch n := v.(type) {
	case int:
		return int64(n)
	case float64:
		if n == float64(int64(n)) {
			return int64(n)
		}
	case []any:
		out := make([]any, len(n))
		for i, e := range n {
			out[i] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, e := range n {
			out[k] = jsonValue(e)
		}
		return out
	}
	return v
}
