package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/render/deadline"
	"github.com/loom-operator/loom/engine/render/hermetic"
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
	// in the parse tree by identity (see tmpltree.OverflowLine).
	last, prev []byte
	// n counts the bytes of the file's own output, so that a lookup knows
	// which of the file's documents it is in.
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, l.r.checkDeadline(p) // a check (package deadline)
	}
	l.prev, l.last = l.last, p
	if err := l.r.count(len(p)); err != nil {
		return 0, err
	}
	l.n += len(p)
	return l.w.Write(p)
}

// limitedBuilder is a strings.Builder that counts against MaxOutputBytes,
// for the output of include and tpl.
type limitedBuilder struct {
	b strings.Builder
	r *renderer
}

func (l *limitedBuilder) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, l.r.checkDeadline(p) // a check (package deadline)
	}
	if err := l.r.count(len(p)); err != nil {
		return 0, err
	}
	return l.b.Write(p)
}

// removedFuncs are sprig functions that read the process environment or the
// network. Rendering must depend on nothing but the parent and the set.
var removedFuncs = []string{"env", "expandenv", "getHostByName"}

// baseFuncs is sprig's map, less removedFuncs, made hermetic (hermetic.Refused
// fail; see hermetic), plus the stateless functions Loom adds. It is built
// once and never mutated.
var baseFuncs = func() template.FuncMap {
	m := sprig.TxtFuncMap()
	for _, name := range removedFuncs {
		delete(m, name)
	}
	hermetic.Apply(m)
	m["toYaml"] = toYAML
	m["fromYaml"] = fromYAML
	m["fromYamlArray"] = fromYAMLArray
	m["toJson"] = toJSON
	m["fromJson"] = fromJSON
	m["required"] = required
	m["len"] = length
	m["until"] = until
	m["untilStep"] = untilStep
	m["seq"] = seq
	m["repeat"] = repeat
	sprigUntilStep = sprig.TxtFuncMap()["untilStep"].(func(int, int, int) []int)
	sprigSeq = sprig.TxtFuncMap()["seq"].(func(...int) string)
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
		m["lookup"] = func(string, string, string, string) (map[string]any, error) { return map[string]any{}, nil }
		return m
	}
	m["include"] = r.include
	m["tpl"] = r.tpl
	m["lookup"] = r.lookup
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

// MaxListItems caps the lists that until and untilStep build, and the
// numbers seq prints. Like repeat's string, they are built whole before
// anything is written, so the output cap alone would let `range until
// .Spec.n` take gigabytes first.
const MaxListItems = 1 << 20

// sprig's own functions, which the guarded ones below call.
var (
	sprigUntilStep func(start, stop, step int) []int
	sprigSeq       func(params ...int) string
)

// stepCount is how many numbers untilStep(start, stop, step) makes,
// without overflowing.
func stepCount(start, stop, step int) uint64 {
	switch {
	case step > 0 && stop > start:
		return (uint64(stop)-uint64(start)-1)/uint64(step) + 1
	case step < 0 && stop < start:
		return (uint64(start)-uint64(stop)-1)/(uint64(0)-uint64(step)) + 1
	}
	return 0
}

// tooMany is the error of a function that would make n items.
func tooMany(fn string, n uint64) error {
	return fmt.Errorf("%s would make %d items, over the cap of %d (a runaway loop?)", fn, n, MaxListItems)
}

// until is sprig's until, capped at MaxListItems.
func until(count int) ([]int, error) {
	step := 1
	if count < 0 {
		step = -1
	}
	if n := stepCount(0, count, step); n > MaxListItems {
		return nil, tooMany("until", n)
	}
	return sprigUntilStep(0, count, step), nil
}

// untilStep is sprig's untilStep, capped at MaxListItems.
func untilStep(start, stop, step int) ([]int, error) {
	if n := stepCount(start, stop, step); n > MaxListItems {
		return nil, tooMany("untilStep", n)
	}
	return sprigUntilStep(start, stop, step), nil
}

// seq is sprig's seq (seq END, seq START END, seq START STEP END),
// capped at MaxListItems numbers.
func seq(params ...int) (string, error) {
	start, step, end := 1, 0, 0
	switch len(params) {
	case 1:
		end = params[0]
	case 2:
		start, end = params[0], params[1]
	case 3:
		start, step, end = params[0], params[1], params[2]
	default:
		return sprigSeq(params...), nil
	}
	if step == 0 {
		step = 1
		if end < start {
			step = -1
		}
	}
	// The end is inclusive: one step further is the exclusive stop.
	if n := stepCount(start, end, step) + 1; n > MaxListItems {
		return "", tooMany("seq", n)
	}
	return sprigSeq(params...), nil
}

// repeat is sprig's repeat, refusing a string over the output cap before
// building it.
func repeat(count int, str string) (string, error) {
	if count > 0 && len(str) > 0 && count > MaxOutputBytes/len(str) {
		return "", fmt.Errorf("repeat would make %d bytes, over the %d MiB output cap (a runaway loop?)",
			uint64(count)*uint64(len(str)), MaxOutputBytes>>20)
	}
	return strings.Repeat(str, max(count, 0)), nil
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
	written int          // bytes the templates wrote in this render
	out     limitWriter  // the writer of a template file's output
	lk      *lookupState // what lookup reads and records; nil outside a render
	// ctx is the render's context, and done its Done channel (nil: no
	// deadline), which every turn of a loop checks (see deadline.go).
	ctx  context.Context
	done <-chan struct{}
	// authored are the set's string literals; fromSpec counts the tpl
	// calls running text that is none of them, which came from the
	// parent's spec (see lookupState.refuseFromSpec).
	authored map[string]bool
	fromSpec int
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
	if !r.authored[text] {
		r.fromSpec++
		defer func() { r.fromSpec-- }()
	}
	t, err := r.t.Clone()
	if err != nil {
		return "", fmt.Errorf("tpl: %w", err)
	}
	t, err = t.New(tplName).Parse(text)
	if err != nil {
		return "", err
	}
	deadline.Guard(t, r.t) // the text's own trees; the set's are guarded already
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
	root     *template.Template
	authored map[string]bool // the string literals of root's templates
	p        sync.Pool
}

func (p *rendererPool) init(root *template.Template) {
	p.root = root
	p.authored = map[string]bool{}
	for _, t := range root.Templates() {
		if t.Tree != nil && t.Tree.Root != nil {
			deadline.Walk(t.Tree.Root, func(n parse.Node) {
				if s, ok := n.(*parse.StringNode); ok {
					p.authored[s.Text] = true
				}
			})
		}
	}
}

func (p *rendererPool) get() (*renderer, error) {
	if r, ok := p.p.Get().(*renderer); ok {
		r.depth, r.written, r.lk, r.ctx, r.done, r.fromSpec = 0, 0, nil, nil, nil, 0
		return r, nil
	}
	t, err := p.root.Clone()
	if err != nil {
		return nil, err
	}
	r := &renderer{authored: p.authored}
	r.t = t.Funcs(funcMap(r))
	return r, nil
}

func (p *rendererPool) put(r *renderer) {
	r.lk = nil // keeps no reads, nor the objects they returned
	r.ctx, r.done = nil, nil
	p.p.Put(r)
}
