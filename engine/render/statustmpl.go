package render

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RenderStatus renders the set's status template, which loom.yaml names in
// its status field, into extra fields for the parent's status. Its data is
// the same as a child template's, plus .Children: the live children, by
// kind and then by name ({{ (index .Children "Service" .Name).spec.ports }}).
// The output must be one YAML mapping. A set without a status template
// returns nil.
func (s *Set) RenderStatus(parent *unstructured.Unstructured, children []*unstructured.Unstructured) (map[string]any, error) {
	file := s.Config.Status
	if file == "" {
		return nil, nil
	}
	data := templateData(parent.DeepCopy().Object)
	byKind := map[string]any{}
	for _, c := range children {
		m, ok := byKind[c.GetKind()].(map[string]any)
		if !ok {
			m = map[string]any{}
			byKind[c.GetKind()] = m
		}
		m[c.GetName()] = c.DeepCopy().Object
	}
	data["Children"] = byKind
	r, err := s.pool.get()
	if err != nil {
		return nil, &Error{File: file, Err: err}
	}
	defer s.pool.put(r)
	var buf bytes.Buffer
	if err := s.execute(r, &buf, file, data); err != nil {
		return nil, err
	}
	out := bytes.ReplaceAll(buf.Bytes(), noValue, nil)
	if isBlank(out) {
		return nil, nil
	}
	m, err := decodeYAML(out)
	if err != nil {
		return nil, s.yamlError(file, 1, out, err)
	}
	if m == nil {
		return nil, nil
	}
	for _, reserved := range []string{"observedGeneration", "conditions", "state", "children"} {
		if _, ok := m[reserved]; ok {
			return nil, &Error{File: file, Line: s.findKeyLine(file, 1, reserved), Err: fmt.Errorf("status.%s is Loom's own and cannot be set by the status template", reserved)}
		}
	}
	return m, nil
}
