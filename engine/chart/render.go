package chart

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"text/template"

	ci "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	cutil "helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// Release is what .Release holds, besides Service ("Helm").
type Release struct {
	// Name is .Release.Name.
	Name string
	// Namespace is .Release.Namespace.
	Namespace string
	// Revision is .Release.Revision.
	Revision int
	// IsInstall is .Release.IsInstall; IsUpgrade is its opposite.
	IsInstall bool
}

// Position is where a template is while it runs: the file, and how many
// bytes of it have been written.
type Position struct {
	File   string
	Offset int
}

// Env is what one render may see besides the values.
type Env struct {
	// Release fills .Release.
	Release Release
	// Capabilities fills .Capabilities; nil is Helm's defaults.
	Capabilities *common.Capabilities
	// Service is .Release.Service; "" is Helm's "Helm".
	Service string
	// Lookup answers the lookup function; nil finds nothing, as under
	// `helm template`.
	Lookup func(at Position, apiVersion, kind, namespace, name string) (map[string]any, error)
	// Seed makes the random functions (SeededFuncs) give this render's
	// values: the same seed, the same values. Without it they fail.
	Seed []byte
	// Writer, when set, wraps each file's output writer (to count or cap
	// what the templates write).
	Writer func(io.Writer) io.Writer
}

// File is one rendered template file.
type File struct {
	// Name is the template's path, e.g. web/templates/deployment.yaml or
	// web/charts/db/templates/service.yaml.
	Name string
	// Text is what it rendered, with Helm's "<no value>" removed.
	Text string
}

// Result is one render of a chart.
type Result struct {
	// Files are the rendered templates, partials left out, in the order
	// Helm executes them. A Result may be shared with later renders of
	// the same input (see Chart.Render): it must not be changed.
	Files []File
}

// NotesFile reports whether name is a NOTES.txt, which Helm renders but
// never installs.
func NotesFile(name string) bool { return path.Base(name) == "NOTES.txt" }

// Error is a failure of one template file; Err is text/template's error,
// which names the file and line.
type Error struct {
	// File is the template's path; "" for a failure of the values.
	File string
	// Err is the cause.
	Err error
}

func (e *Error) Error() string {
	if e.File == "" {
		return e.Err.Error()
	}
	return e.File + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Render renders the chart with values, as Helm 4 installs it: subcharts
// enabled and imported by ProcessDependencies, values coalesced over each
// chart's values.yaml and checked against values.schema.json, Chart.yaml's
// kubeVersion checked, then every template executed. values is not
// changed. An error is an *Error.
func (c *Chart) Render(values map[string]any, env Env) (*Result, error) {
	caps := env.Capabilities
	if caps == nil {
		caps = common.DefaultCapabilities
	}
	if kv := c.chart.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, &Error{Err: fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", kv, caps.KubeVersion.String())}
	}
	p, err := c.prepare(values)
	if err != nil {
		return nil, err
	}
	key := outputKey(p.key, env, caps)
	if res, ok := c.outputs.get(key); ok {
		return res, nil
	}
	top := common.Values{
		"Capabilities": caps,
		"Release": map[string]any{
			"Name":      env.Release.Name,
			"Namespace": env.Release.Namespace,
			"IsUpgrade": !env.Release.IsInstall,
			"IsInstall": env.Release.IsInstall,
			"Revision":  env.Release.Revision,
			"Service":   "Helm",
		},
		// A copy: templates may change .Values (set, unset), and Helm
		// gives each render values of its own.
		"Values": deepCopy(p.values),
	}
	if env.Service != "" {
		top["Release"].(map[string]any)["Service"] = env.Service
	}
	tpls := map[string]renderable{}
	i := 0
	c.collect(p.ch, tpls, top, p.meta, &i)
	sh, err := c.shape(p.order, tpls)
	if err != nil {
		return nil, err
	}
	r := sh.get()
	defer sh.put(r)
	r.lookup, r.looked, r.seed = env.Lookup, false, env.Seed
	res := &Result{}
	var buf strings.Builder
	for _, name := range p.order {
		if strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		t := tpls[name]
		t.vals["Template"] = common.Values{"Name": name, "BasePath": t.basePath}
		buf.Reset()
		if err := r.execute(&buf, name, t.vals, env.Writer); err != nil {
			return nil, &Error{File: name, Err: err}
		}
		res.Files = append(res.Files, File{Name: name, Text: strings.ReplaceAll(buf.String(), "<no value>", "")})
	}
	if !r.looked {
		size := 0
		for _, f := range res.Files {
			size += len(f.Text)
		}
		c.outputs.put(key, res, size+len(key))
	}
	return res, nil
}

// outputKey names a render's input: the values, the release, and the
// capabilities. Rendering is hermetic (the functions whose value differs
// on every render are refused, see Options.Funcs), so a render that made
// no lookup gives the same files for the same key, and Render keeps them:
// the controller renders an unchanged parent again on every event of its
// children.
func outputKey(values [32]byte, env Env, caps *common.Capabilities) string {
	h := sha256.New()
	h.Write(values[:])
	h.Write(env.Seed)
	h.Write([]byte{0})
	fmt.Fprintf(h, "\x00%s\x00%s\x00%d\x00%t\x00%s\x00%s\x00", env.Release.Name, env.Release.Namespace,
		env.Release.Revision, env.Release.IsInstall, env.Service, caps.KubeVersion.Version)
	for _, v := range caps.APIVersions {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return string(h.Sum(nil))
}

// prepared is what Helm's functions make of one set of values: the chart
// with its enabled subcharts (aliased, their values imported), the
// coalesced values, checked against the schemas, and each chart's
// .Chart, in collect's order. It depends on nothing but the values, so it
// is kept, read-only, for the next render of the same values.
type prepared struct {
	key    [32]byte // the hash of the values' JSON
	ch     *chartv2.Chart
	values common.Values
	meta   []map[string]any
	order  []string
}

// maxPrepared bounds the prepared values kept per chart.
const maxPrepared = 64

// prepare runs Helm's ProcessDependencies and
// ToRenderValuesWithSchemaValidation on a copy of the chart, or returns
// what an earlier render of the same values made. values is not changed.
func (c *Chart) prepare(values map[string]any) (*prepared, error) {
	raw, err := json.Marshal(values)
	if err != nil {
		return nil, &Error{Err: fmt.Errorf("values: %w", err)}
	}
	key := sha256.Sum256(raw)
	c.mu.Lock()
	p, ok := c.prepared[key]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	// Helm's functions get a copy of their own: import-values and
	// coalescing must not reach the caller's values.
	values = deepCopy(values).(map[string]any)
	ch := copyTree(c.chart)
	if err := chartutil.ProcessDependencies(ch, values); err != nil {
		return nil, &Error{Err: err}
	}
	top, err := cutil.ToRenderValuesWithSchemaValidation(ch, values, common.ReleaseOptions{}, common.DefaultCapabilities, false)
	if err != nil {
		return nil, &Error{Err: err}
	}
	p = &prepared{key: key, ch: ch, values: top["Values"].(common.Values)}
	tpls := map[string]renderable{}
	c.collectMeta(ch, &p.meta)
	i := 0
	c.collect(ch, tpls, common.Values{"Values": p.values}, p.meta, &i)
	p.order = executionOrder(tpls)
	c.mu.Lock()
	if len(c.prepared) >= maxPrepared {
		for k := range c.prepared { // drop one, any
			delete(c.prepared, k)
			break
		}
	}
	c.prepared[key] = p
	c.mu.Unlock()
	return p, nil
}

// collectMeta is each chart's .Chart (Chart.yaml as a map, and IsRoot), in
// the order collect visits them.
func (c *Chart) collectMeta(ch *chartv2.Chart, out *[]map[string]any) {
	acc, _ := ci.NewAccessor(ch)
	meta := acc.MetadataAsMap()
	meta["IsRoot"] = acc.IsRoot()
	*out = append(*out, meta)
	for _, d := range ch.Dependencies() {
		c.collectMeta(d, out)
	}
}

// deepCopy copies the maps and lists of a value tree; anything else is
// shared (strings, numbers, and values templates cannot change).
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case common.Values:
		out := make(common.Values, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// renderable is a template and the data it runs with.
type renderable struct {
	text     []byte
	vals     common.Values
	basePath string
}

// collect gathers the templates of ch and its enabled subcharts, with
// each chart's data (.Values scoped to the chart), as Helm's engine does.
// metas are the charts' .Chart maps in visiting order; *i counts them.
func (c *Chart) collect(ch *chartv2.Chart, tpls map[string]renderable, parent common.Values, metas []map[string]any, i *int) map[string]any {
	acc, _ := ci.NewAccessor(ch)
	meta := deepCopy(metas[*i]).(map[string]any)
	*i++
	subcharts := map[string]any{}
	next := common.Values{
		"Chart":        meta,
		"Files":        c.filesOf(ch),
		"Release":      parent["Release"],
		"Capabilities": parent["Capabilities"],
		"Values":       make(common.Values),
		"Subcharts":    subcharts,
	}
	if acc.IsRoot() {
		next["Values"] = parent["Values"]
	} else if vs, err := parent.Table("Values." + acc.Name()); err == nil {
		next["Values"] = vs
	}
	for _, d := range ch.Dependencies() {
		subcharts[d.Name()] = c.collect(d, tpls, next, metas, i)
	}
	base := acc.ChartFullPath()
	for _, t := range ch.Templates {
		if t == nil || (acc.IsLibraryChart() && !strings.HasPrefix(path.Base(t.Name), "_")) {
			continue
		}
		tpls[path.Join(base, t.Name)] = renderable{text: t.Data, vals: next, basePath: path.Join(base, "templates")}
	}
	return map[string]any(next)
}

// executionOrder is Helm's order of parsing and executing: the deepest
// paths first, and among paths as deep, in reverse name order (so a
// parent chart's define overrides a subchart's).
func executionOrder(tpls map[string]renderable) []string {
	keys := make([]string, 0, len(tpls))
	for k := range tpls {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		ca, cb := strings.Count(a, "/"), strings.Count(b, "/")
		if ca != cb {
			return ca > cb
		}
		return a > b
	})
	return keys
}

// maxShapes bounds the parsed shapes kept per chart; past it a shape is
// parsed for the render and dropped.
const maxShapes = 32

// shape is the parsed templates of one set of enabled subcharts.
type shape struct {
	root  *template.Template
	pool  chan *renderer
	c     *Chart
	sites []site // the random functions' calls, renamed (markSites)
}

// shape returns the parsed templates for order, parsing them the first
// time this set of files is seen.
func (c *Chart) shape(order []string, tpls map[string]renderable) (*shape, error) {
	key := strings.Join(order, "\x00")
	c.mu.Lock()
	sh := c.shapes[key]
	c.mu.Unlock()
	if sh != nil {
		return sh, nil
	}
	root := template.New("gotpl").Option("missingkey=zero").Funcs(helmFuncs()).Funcs(c.overrides)
	for _, name := range order {
		if _, err := root.New(name).Parse(string(tpls[name].text)); err != nil {
			return nil, &Error{File: name, Err: err}
		}
	}
	sites := markSites(root)
	stubs := template.FuncMap{}
	for i := range sites {
		stubs[siteFunc(i)] = func(...any) (any, error) { return nil, errOutside }
	}
	root.Funcs(stubs)
	sh = &shape{root: root, pool: make(chan *renderer, 8), c: c, sites: sites}
	c.mu.Lock()
	if len(c.shapes) < maxShapes {
		c.shapes[key] = sh
	}
	c.mu.Unlock()
	return sh, nil
}

// Parse parses every template of the chart and of all its subcharts,
// whatever the values, for checks that read the templates (functions
// they call). Templates are named by their path.
func (c *Chart) Parse() (*template.Template, map[string]string, error) {
	tpls := map[string]renderable{}
	var walk func(ch *chartv2.Chart)
	walk = func(ch *chartv2.Chart) {
		acc, _ := ci.NewAccessor(ch)
		for _, t := range ch.Templates {
			if t != nil {
				tpls[path.Join(acc.ChartFullPath(), t.Name)] = renderable{text: t.Data}
			}
		}
		for _, d := range ch.Dependencies() {
			walk(d)
		}
	}
	walk(c.chart)
	order := executionOrder(tpls)
	root := template.New("gotpl").Option("missingkey=zero").Funcs(helmFuncs()).Funcs(c.overrides)
	texts := make(map[string]string, len(order))
	for _, name := range order {
		texts[name] = string(tpls[name].text)
		if _, err := root.New(name).Parse(texts[name]); err != nil {
			return nil, nil, &Error{File: name, Err: err}
		}
	}
	return root, texts, nil
}

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
	// the cluster, and is not kept.
	looked bool
	// seed is the render's Env.Seed; calls counts each file's random calls.
	seed  []byte
	calls map[string]int
	// sites are the shape's random calls (markSites).
	sites []site
}

func (sh *shape) get() *renderer {
	select {
	case r := <-sh.pool:
		return r
	default:
	}
	r := &renderer{calls: map[string]int{}, sites: sh.sites}
	t, err := sh.root.Clone()
	if err != nil {
		panic(err) // Clone fails only after the tree has executed, and the root never does
	}
	r.t = t.Funcs(r.funcs()).Funcs(r.siteFuncs())
	return r
}

func (sh *shape) put(r *renderer) {
	r.lookup, r.out, r.looked, r.seed = nil, nil, false, nil
	select {
	case sh.pool <- r:
	default:
	}
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
	r.out = &countWriter{w: w}
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
	var b strings.Builder
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
	if out, ok := r.tplFast(text, data); ok {
		return out, nil
	}
	t, err := r.t.Clone()
	if err != nil {
		return "", fmt.Errorf("cannot clone template: %w", err)
	}
	// The clone's include and tpl see the defines that text adds.
	sub := &renderer{t: t, depth: r.depth + 1, lookup: r.lookup, file: r.file, out: r.out, seed: r.seed, calls: r.calls}
	t.Option("missingkey=zero").Funcs(sub.funcs())
	if t, err = t.New(TplName).Parse(text); err != nil {
		return "", fmt.Errorf("cannot parse template %q: %w", text, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("error during tpl function execution for %q: %w", text, err)
	}
	return strings.ReplaceAll(b.String(), "<no value>", ""), nil
}

// maxTplCache bounds the tpl texts a renderer keeps parsed.
const maxTplCache = 512

// tplFast runs text that defines no template without cloning the whole
// tree, as Helm's tpl does on every call: the text is parsed once, into
// the renderer's own tree under a name of its own, and executed there.
// It reports false when it cannot: text that may define a template (a
// define would outlive the call), or that fails, which the slow path
// runs again for Helm's error message.
func (r *renderer) tplFast(text string, data any) (string, bool) {
	if strings.Contains(text, "define") || strings.Contains(text, "block") {
		return "", false
	}
	t, ok := r.tpls[text]
	if !ok {
		if len(r.tpls) >= maxTplCache {
			return "", false
		}
		var err error
		if t, err = r.t.New(fmt.Sprintf("%s\x00%d", TplName, len(r.tpls))).Parse(text); err != nil {
			return "", false
		}
		if r.tpls == nil {
			r.tpls = map[string]*template.Template{}
		}
		r.tpls[text] = t
	}
	r.depth++
	defer func() { r.depth-- }()
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", false
	}
	return strings.ReplaceAll(b.String(), "<no value>", ""), true
}

func (r *renderer) lookupFunc(apiVersion, kind, namespace, name string) (map[string]any, error) {
	r.looked = true
	if r.lookup == nil {
		return map[string]any{}, nil
	}
	at := Position{File: r.file}
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

// countWriter counts what a file writes.
type countWriter struct {
	w io.Writer
	n int
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}
