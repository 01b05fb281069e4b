package chart

import (
	"encoding/json"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// Charts turn values into YAML and back many times per render (a label
// helper that merges two maps through toYaml and fromYaml, say), and
// sigs.k8s.io/yaml does each through a JSON and a YAML pass. Both are pure
// functions of their input, so their results are kept: toYaml by the
// value's JSON (what sigs.k8s.io/yaml converts anyway), fromYaml by its
// text. A render that repeats the same conversions, as every render of
// an unchanged parent does, does each once.

// memoBytes bounds what each memo keeps; past it, the memo starts over.
const memoBytes = 4 << 20

// memo maps a key to a result, up to memoBytes of keys and strings.
type memo[V any] struct {
	mu    sync.Mutex
	m     map[string]V
	bytes int
}

func (m *memo[V]) get(k string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[k]
	return v, ok
}

func (m *memo[V]) put(k string, v V, size int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || m.bytes+size > memoBytes {
		m.m, m.bytes = map[string]V{}, 0
	}
	m.m[k] = v
	m.bytes += size
}

var (
	yamlOf    memo[string]
	fromYAMLs memo[fromYAMLResult]
)

// fromYAMLResult is fromYaml's map, kept unchanged: each call returns a copy.
type fromYAMLResult struct{ m map[string]any }

// marshalYAML is sigs.k8s.io/yaml.Marshal, through the memo.
func marshalYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if y, ok := yamlOf.get(string(j)); ok {
		return []byte(y), nil
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, err
	}
	yamlOf.put(string(j), string(y), 2*len(j)+len(y))
	return y, nil
}

// unmarshalYAMLMap is fromYaml's parse, through the memo.
func unmarshalYAMLMap(s string) map[string]any {
	if r, ok := fromYAMLs.get(s); ok {
		return deepCopy(r.m).(map[string]any)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	fromYAMLs.put(strings.Clone(s), fromYAMLResult{m: m}, 3*len(s))
	return deepCopy(m).(map[string]any)
}
