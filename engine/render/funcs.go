package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/loom-operator/loom/engine/render/deadline"
	"github.com/loom-operator/loom/engine/render/tmplfuncs"
)

// MaxIncludeDepth caps how deeply include and tpl may nest, so that a
// template that includes itself fails instead of exhausting the stack.
const MaxIncludeDepth = 1000

// MaxOutputBytes caps what the templates may write while rendering one
// parent (tmplfuncs.MaxOutputBytes).
const MaxOutputBytes = tmplfuncs.MaxOutputBytes

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

// funcMap returns the functions for one renderer. include and tpl need the
// renderer's own template tree and depth; with r == nil they are stubs that
// only let the parser accept their names.
func funcMap(r *renderer) template.FuncMap {
	base := tmplfuncs.Base()
	m := make(template.FuncMap, len(base)+3)
	for k, v := range base {
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
