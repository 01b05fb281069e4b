package render

import (
	"bytes"
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/render/yamldoc"
)

// RenderStatus renders the set's status template, which loom.yaml names in
// its status field, into extra fields for the parent's status. Its data is
// the same as a child template's, plus .Children: the live children, by
// kind and then by name ({{ (index .Children "Service" .Name).spec.ports }}).
// The output must be one YAML mapping. A set without a status template
// returns nil.
func (s *Set) RenderStatus(parent *unstructured.Unstructured, children []*unstructured.Unstructured) (map[string]any, error) {
	m, _, err := s.RenderStatusWith(context.Background(), parent, children, nil)
	return m, err
}

// RenderStatusWith is RenderStatus answering lookups from reader, under
// the same rules as RenderWith's; children are the parent's own. It
// returns the lookups made, for the caller to watch. It stops when ctx
// ends, as RenderContext does.
func (s *Set) RenderStatusWith(ctx context.Context, parent *unstructured.Unstructured, children []*unstructured.Unstructured, reader Reader) (map[string]any, []Read, error) {
	file := s.Config.Status
	if file == "" {
		return nil, nil, nil
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
		return nil, nil, &Error{File: file, Err: err}
	}
	defer s.pool.put(r)
	r.lk = &lookupState{reader: reader, rules: s.Config.Lookups, specLookups: s.Config.SpecLookups, namespace: parent.GetNamespace(), parentUID: string(parent.GetUID()), file: file}
	r.ctx, r.done = ctx, ctx.Done()
	var buf bytes.Buffer
	if err := s.execute(r, &buf, file, data); err != nil {
		return nil, r.lk.reads, err
	}
	reads := r.lk.reads
	names := make(map[string]bool, len(children))
	for _, c := range children {
		names[keyOf(c)] = true
	}
	if foreign, refuse := foreignReads(reads, names); foreign != "" {
		// Run it again refusing those reads, for the error's line.
		r.lk.refuse, r.lk.reads = refuse, nil
		buf.Reset()
		if err := s.execute(r, &buf, file, data); err != nil {
			return nil, reads, err
		}
		return nil, reads, &Error{File: file, Err: fmt.Errorf("%w: a lookup of an undeclared kind read an object that is not a child of this parent", ErrLookupRefused)}
	}
	m, err := s.mapping(file, buf.Bytes())
	if m == nil {
		return nil, reads, err
	}
	for _, reserved := range []string{"observedGeneration", "conditions", "state", "children"} {
		if _, ok := m[reserved]; ok {
			return nil, reads, &Error{File: file, Line: s.findKeyLine(file, 1, reserved), Err: fmt.Errorf("status.%s is Loom's own and cannot be set by the status template", reserved)}
		}
	}
	return m, reads, nil
}

// mapping decodes what file rendered as one YAML mapping (nil when blank).
func (s *Set) mapping(file string, out []byte) (map[string]any, error) {
	out = bytes.ReplaceAll(out, noValue, nil)
	if yamldoc.IsBlank(out) {
		return nil, nil
	}
	m, err := yamldoc.Decode(out)
	if err != nil {
		return nil, s.yamlError(file, 1, out, err)
	}
	return m, nil
}
