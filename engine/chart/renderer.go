package chart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"

	"github.com/loom-operator/loom/engine/render/deadline"
)

// renderer is a clone of a shape's templates with include, tpl, required,
// fail and lookup bound to it.
type renderer struct {
	t      *template.Template
	depth  int
	lookup func(Position, string, string, string, string) (map[string]any, error)
	file   string
	out    *countWriter
	// tpls are the texts tplFast has parsed into t.
	tpls map[string]*template.Template
	// looked is set when the render called lookup: its output depends on
	// the cluster, and is not kept. A sub-renderer (see tpl) marks its
	// root's.
	looked bool
	// root is the renderer a sub-renderer runs tpl text for; nil for a
	// render's own.
	root *renderer
	// authored are the chart's own strings; fromSpec counts the tpl
	// calls running text that is not one of them (see authoredTexts).
	authored map[string]bool
	fromSpec int
	// sh is the shape r is a clone of; tplBytes is the weight of the
	// texts tplFast parsed into r.t (see maxTplBytes).
	sh       *shape
	tplBytes int64
	// seed is the render's Env.Seed; calls counts each file's random calls.
	seed  []byte
	calls map[string]int
	// kept are the render's Env.Kept; gen collects what the generating
	// functions returned (Result.Generated).
	kept, gen map[string]string
	// sites are the shape's random calls (markSites).
	sites []site
	// ctx is the render's context, and done its Done channel (nil: no
	// deadline), which every turn of a loop checks (see deadline.go);
	// site is the check that failed, kept by the render's own renderer.
	ctx  context.Context
	done <-chan struct{}
	site []byte
}

func (sh *shape) get() *renderer {
	select {
	case r := <-sh.pool:
		return r
	default:
	}
	r := &renderer{calls: map[string]int{}, sites: sh.sites, authored: sh.c.authoredTexts(), sh: sh}
	r.clone()
	return r
}

// clone gives r a fresh clone of its shape's templates, with r's
// functions bound.
func (r *renderer) clone() {
	t, err := r.sh.root.Clone()
	if err != nil {
		panic(err) // Clone fails only after the tree has executed, and the root never does
	}
	r.t = t.Funcs(r.funcs()).Funcs(r.siteFuncs())
}

func (sh *shape) put(r *renderer) {
	r.lookup, r.out, r.looked, r.seed, r.kept, r.gen, r.fromSpec = nil, nil, false, nil, nil, nil, 0
	r.ctx, r.done, r.site = nil, nil, nil
	// Under the chart's lock, so that a shape being dropped (drain)
	// cannot miss a renderer on its way back.
	sh.c.mu.Lock()
	defer sh.c.mu.Unlock()
	if sh.cached.Load() {
		select {
		case sh.pool <- r:
			return
		default:
		}
	}
	// Dropped: what its parsed tpl texts held is free again.
	sh.c.tplBytes.Add(-r.tplBytes)
}

// MaxIncludeDepth caps how deeply include and tpl may nest, as Helm's
// recursion limit does.
const MaxIncludeDepth = 1000

func (r *renderer) funcs() template.FuncMap {
	m := r.seededFuncs()
	m["include"] = r.include
	m["tpl"] = r.tpl
	m["required"] = required
	m["fail"] = fail
	m["lookup"] = r.lookupFunc
	return m
}

// execute runs one file, turning a panic (mustToYaml's, say) into an error.
func (r *renderer) execute(w *strings.Builder, name string, data any, wrap func(io.Writer) io.Writer) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("rendering template failed: %v", p)
		}
	}()
	r.file = name
	clear(r.calls)
	r.out = &countWriter{w: w, r: r}
	var out io.Writer = r.out
	if wrap != nil {
		out = wrap(out)
	}
	return r.t.ExecuteTemplate(out, name, data)
}

func (r *renderer) include(name string, data any) (string, error) {
	if r.depth >= MaxIncludeDepth {
		return "", fmt.Errorf("rendering template has a nested reference name: %s: unable to execute template", name)
	}
	r.depth++
	defer func() { r.depth-- }()
	b := checkedBuilder{r: r}
	err := r.t.ExecuteTemplate(&b, name, data)
	return b.String(), err
}

// TplName names the template that tpl parses its text into: Helm's
// name for it, which its error messages show.
const TplName = "gotpl"

func (r *renderer) tpl(text string, data any) (string, error) {
	if r.depth >= MaxIncludeDepth {
		return "", fmt.Errorf("tpl: nesting deeper than %d", MaxIncludeDepth)
	}
	if !r.authored[text] {
		top := r.top()
		top.fromSpec++
		defer func() { top.fromSpec-- }()
	}
	if out, ok := r.tplFast(text, data); ok {
		return out, nil
	}
	if err := stopped(r.ctx); err != nil {
		return "", err // the slow path would stop at once
	}
	t, err := r.t.Clone()
	if err != nil {
		return "", fmt.Errorf("cannot clone template: %w", err)
	}
	// The clone's include and tpl see the defines that text adds.
	sub := &renderer{t: t, depth: r.depth + 1, lookup: r.lookup, file: r.file, out: r.out, seed: r.seed, calls: r.calls, kept: r.kept, gen: r.gen, root: r.top(), authored: r.authored,
		ctx: r.ctx, done: r.done}
	t.Option("missingkey=zero").Funcs(sub.funcs())
	if t, err = t.New(TplName).Parse(text); err != nil {
		return "", fmt.Errorf("cannot parse template %q: %w", text, err)
	}
	deadline.Guard(t, r.t) // the text's own trees; the chart's are guarded already
	b := checkedBuilder{r: sub}
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("error during tpl function execution for %q: %w", text, err)
	}
	return strings.ReplaceAll(b.String(), "<no value>", ""), nil
}

// maxTplCache bounds the tpl texts a renderer keeps parsed.
const maxTplCache = 512

// maxTplBytes bounds, in bytes, the parsed tpl texts that one chart's
// renderers keep, all shapes and pooled renderers together. Texts come
// from parents' specs, so their number and size are a tenant's choice.
// A parsed text is counted as tplWeight times its length (text/template's
// nodes for dense actions take about that); a text weighing more than a
// sixteenth of the budget is never kept.
const (
	maxTplBytes = 16 << 20
	tplWeight   = 32
)

// reserveTpl takes w bytes of the chart's tpl budget for r, or reports
// false when the budget has no room.
func (r *renderer) reserveTpl(w int64) bool {
	budget := &r.sh.c.tplBytes
	for {
		cur := budget.Load()
		if cur+w > maxTplBytes {
			return false
		}
		if budget.CompareAndSwap(cur, cur+w) {
			r.tplBytes += w
			return true
		}
	}
}

// dropTpls forgets the texts r parsed: r gets a fresh clone of its
// shape (a text tplFast parsed defines nothing, so the clone holds the
// same defines), and their bytes return to the chart's budget.
func (r *renderer) dropTpls() {
	r.clone()
	r.tpls = nil
	r.sh.c.tplBytes.Add(-r.tplBytes)
	r.tplBytes = 0
}

// tplFast runs text that defines no template without cloning the whole
// tree, as Helm's tpl does on every call: the text is parsed once, into
// the renderer's own tree under a name of its own, and executed there.
// It reports false when it cannot: text that may define a template (a
// define would outlive the call), or that fails, which the slow path
// runs again for Helm's error message. A pooled renderer keeps its texts
// within the chart's budget (maxTplBytes); a sub-renderer's tree, and
// what it parsed, lives for one tpl call only.
func (r *renderer) tplFast(text string, data any) (string, bool) {
	if strings.Contains(text, "define") || strings.Contains(text, "block") {
		return "", false
	}
	t, ok := r.tpls[text]
	if !ok {
		w := int64(len(text)) * tplWeight
		if w > maxTplBytes/16 {
			return "", false
		}
		switch {
		case r.sh == nil: // a sub-renderer
			if len(r.tpls) >= maxTplCache {
				return "", false
			}
			w = 0
		case len(r.tpls) >= maxTplCache || !r.reserveTpl(w):
			r.dropTpls()
			if !r.reserveTpl(w) {
				return "", false
			}
		}
		var err error
		if t, err = r.t.New(fmt.Sprintf("%s\x00%d", TplName, len(r.tpls))).Parse(text); err != nil {
			if w > 0 {
				r.sh.c.tplBytes.Add(-w)
				r.tplBytes -= w
			}
			return "", false
		}
		deadline.GuardTree(t.Tree) // text without a define parses into one tree
		if r.tpls == nil {
			r.tpls = map[string]*template.Template{}
		}
		r.tpls[text] = t
	}
	r.depth++
	defer func() { r.depth-- }()
	b := checkedBuilder{r: r}
	if err := t.Execute(&b, data); err != nil {
		return "", false
	}
	return strings.ReplaceAll(b.String(), "<no value>", ""), true
}

// top is the render's own renderer: r, or the one r runs tpl text for.
func (r *renderer) top() *renderer {
	if r.root != nil {
		return r.root
	}
	return r
}

func (r *renderer) lookupFunc(apiVersion, kind, namespace, name string) (map[string]any, error) {
	r.top().looked = true
	if r.lookup == nil {
		return map[string]any{}, nil
	}
	at := Position{File: r.file, FromSpec: r.top().fromSpec > 0}
	if r.out != nil {
		at.Offset = r.out.n
	}
	return r.lookup(at, apiVersion, kind, namespace, name)
}

// required fails with msg when v is nil or "".
func required(msg string, v any) (any, error) {
	if v == nil {
		return v, errors.New(msg)
	}
	if s, ok := v.(string); ok && s == "" {
		return v, errors.New(msg)
	}
	return v, nil
}

// fail fails the render with msg.
func fail(msg string) (string, error) { return "", errors.New(msg) }

// countWriter counts what a file writes, and checks the render's
// context on each empty write.
type countWriter struct {
	w io.Writer
	n int
	r *renderer
}

func (c *countWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, c.r.check(p) // a check (package deadline)
	}
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}
