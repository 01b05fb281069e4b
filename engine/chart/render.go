package chart

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
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
	// FromSpec is true when the lookup is made by text that tpl runs
	// and that is not the chart's own (see authoredTexts): under Loom,
	// text a parent's author wrote.
	FromSpec bool
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
	// Kept are values the generating functions (GeneratedFuncs) made in
	// earlier renders with this seed, by key (Result.Generated): a call
	// whose key is here returns its value.
	Kept map[string]string
	// Writer, when set, wraps each file's output writer (to count or cap
	// what the templates write).
	Writer func(io.Writer) io.Writer
	// Omit names template files not to execute (their output is not
	// wanted, as a chart's test hooks are not by Loom).
	Omit map[string]bool
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
	// Generated holds the value of each generating function's call that
	// ran (GeneratedFuncs), by key: kept from Env.Kept or made in this
	// render. A caller that keeps them gives them back in Env.Kept.
	Generated map[string]string
}

// NotesFile reports whether name is a NOTES.txt, which Helm renders but
// never installs.
func NotesFile(name string) bool { return path.Base(name) == "NOTES.txt" }

// Error is a failure of one template file; Err is text/template's error,
// which names the file and line.
type Error struct {
	// File is the template's path; "" for a failure of the values. For
	// an error of Load it is the file's path in the file system Load
	// read.
	File string
	// Line is the line in File, when known and not in Err's text.
	Line int
	// Err is the cause.
	Err error
}

func (e *Error) Error() string {
	if e.File == "" {
		return e.Err.Error()
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Err)
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
	return c.RenderContext(context.Background(), values, env)
}

// RenderContext is Render stopped when ctx ends: a render still running
// then fails with an *Error whose Err is a *StoppedError, at the line of
// the loop it was in (see deadline.go). A stopped render is not kept.
func (c *Chart) RenderContext(ctx context.Context, values map[string]any, env Env) (*Result, error) {
	if err := stopped(ctx); err != nil {
		return nil, &Error{Err: err}
	}
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
	r.kept, r.gen = env.Kept, map[string]string{}
	r.ctx, r.done = ctx, ctx.Done()
	res := &Result{}
	var buf strings.Builder
	for _, name := range p.order {
		if strings.HasPrefix(path.Base(name), "_") || env.Omit[name] {
			continue
		}
		t := tpls[name]
		t.vals["Template"] = common.Values{"Name": name, "BasePath": t.basePath}
		buf.Reset()
		if err := r.execute(&buf, name, t.vals, env.Writer); err != nil {
			return nil, r.locate(name, err)
		}
		res.Files = append(res.Files, File{Name: name, Text: strings.ReplaceAll(buf.String(), "<no value>", "")})
	}
	if len(r.gen) > 0 {
		res.Generated = r.gen
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

// outputKey names a render's input: the values, the release, the seed
// and kept values, and the capabilities. Rendering is hermetic (the functions whose value differs
// on every render are refused, see Options.Funcs), so a render that made
// no lookup gives the same files for the same key, and Render keeps them:
// the controller renders an unchanged parent again on every event of its
// children.
func outputKey(values [32]byte, env Env, caps *common.Capabilities) string {
	h := sha256.New()
	h.Write(values[:])
	h.Write(env.Seed)
	h.Write([]byte{0})
	kept := make([]string, 0, len(env.Kept))
	for k := range env.Kept {
		kept = append(kept, k)
	}
	sort.Strings(kept)
	for _, k := range kept {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", k, len(env.Kept[k]), env.Kept[k])
	}
	fmt.Fprintf(h, "\x00%s\x00%s\x00%d\x00%t\x00%s\x00%s\x00", env.Release.Name, env.Release.Namespace,
		env.Release.Revision, env.Release.IsInstall, env.Service, caps.KubeVersion.Version)
	for _, v := range caps.APIVersions {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	omit := make([]string, 0, len(env.Omit))
	for name, ok := range env.Omit {
		if ok {
			omit = append(omit, name)
		}
	}
	sort.Strings(omit)
	for _, name := range omit {
		h.Write([]byte{1})
		h.Write([]byte(name))
	}
	return string(h.Sum(nil))
}
