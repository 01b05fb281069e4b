package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// MaxIncludeDepth caps how deeply include and tpl may nest, so that a
// template that includes itself fails instead of exhausting the stack.
const MaxIncludeDepth = 1000

// MaxOutputBytes caps what the templates may write while rendering one
// parent, include and tpl output included, so that a runaway loop (say, a
// range over a number from the spec) fails the render instead of
// exhausting Loom's memory. A child that big could not be stored anyway.
const MaxOutputBytes = 32 << 20

// errOutputTooLarge ends a render that writes more than MaxOutputBytes.
var errOutputTooLarge = fmt.Errorf("the templates wrote more than %d MiB for one parent (a runaway loop?)", MaxOutputBytes>>20)

// limitWriter counts what one render writes, against MaxOutputBytes.
type limitWriter struct {
	w io.Writer
	r *renderer
	// last and prev are the last two writes, kept to locate an overflow:
	// text/template writes a text node's own bytes, so a write is found
	// in the parse tree by identity (see overflowLine).
	last, prev []byte
}

func (l *limitWriter) Write(p []byte) (int, error) {
	l.prev, l.last = l.last, p
	if err := l.r.count(len(p)); err != nil {
		return 0, err
	}
	return l.w.Write(p)
}

// limitedBuilder is a strings.Builder that counts against MaxOutputBytes,
// for the output of include and tpl.
type limitedBuilder struct {
	b strings.Builder
	r *renderer
}

func (l *limitedBuilder) Write(p []byte) (int, error) {
	if err := l.r.count(len(p)); err != nil {
		return 0, err
	}
	return l.b.Write(p)
}

// removedFuncs are sprig functions that read the process environment or the
// network. Rendering must depend on nothing but the parent and the set.
var removedFuncs = []string{"env", "expandenv", "getHostByName"}

// baseFuncs is sprig's map, less removedFuncs, plus the stateless functions
// Loom adds. It is built once and never mutated.
var baseFuncs = func() template.FuncMap {
	m := sprig.TxtFuncMap()
	for _, name := range removedFuncs {
		delete(m, name)
	}
	m["toYaml"] = toYAML
	m["fromYaml"] = fromYAML
	m["fromYamlArray"] = fromYAMLArray
	m["toJson"] = toJSON
	m["fromJson"] = fromJSON
	m["required"] = required
	m["len"] = length
	return m
}()

// funcMap returns the functions for one renderer. include and tpl need the
// renderer's own template tree and depth; with r == nil they are stubs that
// only let the parser accept their names.
func funcMap(r *renderer) template.FuncMap {
	m := make(template.FuncMap, len(baseFuncs)+2)
	for k, v := range baseFuncs {
		m[k] = v
	}
	if r == nil {
		m["include"] = func(string, any) (string, error) { return "", errors.New("include used outside a render") }
		m["tpl"] = func(string, any) (string, error) { return "", errors.New("tpl used outside a render") }
		return m
	}
	m["include"] = r.include
	m["tpl"] = r.tpl
	return m
}

// toYAML marshals v as YAML without the trailing newline, like Helm's, but
// returns marshalling errors instead of swallowing them.
func toYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toYaml: %w", err)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// fromYAML parses a YAML mapping.
func fromYAML(s string) (map[string]any, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("fromYaml: %w", err)
	}
	return m, nil
}

// fromYAMLArray parses a YAML sequence.
func fromYAMLArray(s string) ([]any, error) {
	var a []any
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		return nil, fmt.Errorf("fromYamlArray: %w", err)
	}
	return a, nil
}

// toJSON marshals v as compact JSON and returns errors (sprig's swallows them).
func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toJson: %w", err)
	}
	return string(b), nil
}

// fromJSON parses a JSON value and returns errors (sprig's swallows them).
func fromJSON(s string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("fromJson: %w", err)
	}
	return v, nil
}

// length is text/template's len, except that the len of a missing value
// (a key that is not there, which is nil) says so; the builtin fails
// inside reflect ("call of reflect.Value.Type on zero Value").
func length(item reflect.Value) (int, error) {
	for item.IsValid() && (item.Kind() == reflect.Pointer || item.Kind() == reflect.Interface) {
		if item.IsNil() {
			break
		}
		item = item.Elem()
	}
	if !item.IsValid() || ((item.Kind() == reflect.Pointer || item.Kind() == reflect.Interface) && item.IsNil()) {
		return 0, errors.New("len of nothing: the value is missing (a key that is not there?)")
	}
	switch item.Kind() {
	case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
		return item.Len(), nil
	}
	return 0, fmt.Errorf("len of type %s", item.Type())
}

// required fails the render with msg when v is missing or an empty string,
// with Helm's meaning.
func required(msg string, v any) (any, error) {
	if v == nil {
		return nil, errors.New(msg)
	}
	if s, ok := v.(string); ok && s == "" {
		return nil, errors.New(msg)
	}
	return v, nil
}

// renderer is one goroutine's view of a set: a clone of the parsed tree whose
// include and tpl are bound to this renderer's depth counter. Renderers are
// pooled, so a clone is made once per pooled renderer, never per render.
type renderer struct {
	t       *template.Template
	depth   int
	written int         // bytes the templates wrote in this render
	out     limitWriter // the writer of a template file's output
}

// count adds n bytes to what this render wrote, failing past the cap.
func (r *renderer) count(n int) error {
	r.written += n
	if r.written > MaxOutputBytes {
		return errOutputTooLarge
	}
	return nil
}

func (r *renderer) include(name string, data any) (string, error) {
	if r.depth >= MaxIncludeDepth {
		return "", fmt.Errorf("include %q: nesting deeper than %d (a template that includes itself?)", name, MaxIncludeDepth)
	}
	r.depth++
	defer func() { r.depth-- }()
	b := limitedBuilder{r: r}
	if err := r.t.ExecuteTemplate(&b, name, data); err != nil {
		return "", err
	}
	return b.b.String(), nil
}

func (r *renderer) tpl(text string, data any) (string, error) {
	if r.depth >= MaxIncludeDepth {
		return "", fmt.Errorf("tpl: nesting deeper than %d", MaxIncludeDepth)
	}
	r.depth++
	defer func() { r.depth-- }()
	t, err := r.t.Clone()
	if err != nil {
		return "", fmt.Errorf("tpl: %w", err)
	}
	t, err = t.New(tplName).Parse(text)
	if err != nil {
		return "", err
	}
	b := limitedBuilder{r: r}
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.b.String(), nil
}

// tplName names the template that tpl parses its text into. Errors in it
// are located at the file that called tpl (see fromTemplateError).
const tplName = "tpl"

// rendererPool hands out renderers bound to one set's template tree.
type rendererPool struct {
	root *template.Template
	p    sync.Pool
}

func (p *rendererPool) init(root *template.Template) { p.root = root }

func (p *rendererPool) get() (*renderer, error) {
	if r, ok := p.p.Get().(*renderer); ok {
		r.depth, r.written = 0, 0
		return r, nil
	}
	t, err := p.root.Clone()
	if err != nil {
		return nil, err
	}
	r := &renderer{}
	r.t = t.Funcs(funcMap(r))
	return r, nil
}

func (p *rendererPool) put(r *renderer) { p.p.Put(r) }
