package render

import (
	"bytes"
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loom-operator/loom/engine/render/convert"
)

// Converter returns the set's converter between the versions of its
// parent (built when the set loads), or nil for a set of one version.
func (s *Set) Converter() *convert.Converter { return s.converter }

// conversionTemplates runs the set's conversion templates for its
// converter: parsed with the set (include reaches its partials), hermetic,
// under the render's deadline and output cap, lookups refused, errors at
// file and line.
type conversionTemplates struct{ s *Set }

// Spec renders file with the parent as data: the child templates' data
// (.Parent, .Spec, .Name, ...) and .Object, .Metadata and .Status. Its
// output is the other version's spec, one YAML mapping.
func (t conversionTemplates) Spec(ctx context.Context, file string, parent map[string]any) (map[string]any, error) {
	obj := runtime.DeepCopyJSON(parent)
	data := templateData(obj)
	data["Object"], data["Metadata"], data["Status"] = obj, orEmpty(obj["metadata"]), orEmpty(obj["status"])
	r, err := t.s.pool.get()
	if err != nil {
		return nil, &Error{File: file, Err: err}
	}
	defer t.s.pool.put(r)
	r.lk = &lookupState{reader: convert.NoLookups{}, file: file}
	r.ctx, r.done = ctx, ctx.Done()
	var buf bytes.Buffer
	if err := t.s.execute(r, &buf, file, data); err != nil {
		return nil, err
	}
	return t.s.mapping(file, buf.Bytes())
}
