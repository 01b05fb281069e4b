package render

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"
	"github.com/loom-operator/loom/engine/chart"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/hook"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render/doccache"
	"github.com/loom-operator/loom/engine/render/hermetic"
	"github.com/loom-operator/loom/engine/render/tmplfuncs"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// HookAnnotation marks a chart's hook; Loom never applies a test hook.
const HookAnnotation = "helm.sh/hook"

// loadChart loads the chart that loom.yaml names, keeps its files among
// the set's sources (so that the revision covers the whole chart) and
// notes whether it calls a random or generating function (which need
// the parent's seed).
func (s *Set) loadChart(fsys fs.FS) error {
	c, src, err := chart.Load(fsys, s.Config.Chart, chart.Options{Funcs: chartOverrides})
	if err != nil {
		var ce *chart.Error
		if errors.As(err, &ce) { // a file of the chart, at its path in the set
			return &Error{File: ce.File, Line: ce.Line, Err: ce.Err}
		}
		return &Error{File: config.File, Err: err}
	}
	s.chart = c
	for name, b := range src {
		s.sources[name] = b
	}
	root, texts, err := c.Parse()
	if err != nil {
		return s.onDisk(s.chartParseError(err))
	}
	s.chartTexts = make(map[string][]byte, len(texts))
	s.omitted = map[string]bool{}
	for name, text := range texts {
		s.chartTexts[name] = []byte(text)
		if !strings.HasPrefix(path.Base(name), "_") && !chart.NotesFile(name) && hook.NeverAppliedFile(s.chartTexts[name]) {
			s.omitted[name] = true
		}
	}
	// A chart's refused functions (the clock) fail when a call runs, at
	// its line (hermetic), not when the chart loads: charts call them in
	// branches that the values never take.
	for _, tmpl := range root.Templates() {
		if tmpl.Tree != nil && tmpl.Tree.Root != nil && !s.omitted[tmpl.Name()] {
			hermetic.WalkIdentifiers(tmpl.Tree.Root, func(id *parse.IdentifierNode) {
				s.seeded = s.seeded || slices.Contains(chart.SeededFuncs, id.Ident) || slices.Contains(chart.GeneratedFuncs, id.Ident)
			})
		}
	}
	s.caches = map[string]*doccache.Cache{}
	// A chart's Job is ready when it has completed, not when it has
	// started (kstatus's Current): a pre-install hook's Job must finish
	// before the other children are applied. A rule of loom.yaml's for
	// Jobs wins over this one (it comes first).
	s.Config.Readiness = append(s.Config.Readiness, jobsComplete)
	return nil
}

// jobsComplete is the readiness of a chart set's Jobs.
var jobsComplete = config.ReadinessRule{Kind: "Job", Condition: "Complete", FailedCondition: "Failed"}

// Chart is the set's Helm chart, or nil for a set of Loom templates.
func (s *Set) Chart() *chart.Chart { return s.chart }

// chartOverrides make Helm's function map hermetic, as Loom's own is (see
// hermetic): the functions whose value differs on every render fail, the
// date functions refuse to read the clock, keys and values list a map in
// key order (one of the orders Helm may print), printf refuses %p, and
// the functions that build a list or string whole are capped. A chart
// that renders under Helm the same way every time renders the same here.
var chartOverrides = func() template.FuncMap {
	m := sprig.TxtFuncMap()
	hermetic.Apply(m)
	out := tmplfuncs.Bounded()
	for _, name := range []string{"printf", "date", "dateInZone", "date_in_zone", "htmlDate", "htmlDateInZone", "durationRound", "keys", "values"} {
		out[name] = m[name]
	}
	for name := range hermetic.Refused {
		out[name] = m[name]
	}
	return out
}()

// cacheFor is the decode cache of one template file.
func (s *Set) cacheFor(file string) *doccache.Cache {
	if s.chart == nil {
		return s.caches[file]
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	c := s.caches[file]
	if c == nil {
		c = doccache.New(doccache.DefaultBytes)
		s.caches[file] = c
	}
	return c
}

// chartError turns a failure of the chart into an *Error at the template's
// file and line, or at loom.yaml for a failure of the values.
func chartError(err error) error {
	var ce *chart.Error
	if !errors.As(err, &ce) {
		return &Error{File: config.File, Err: err}
	}
	if ce.File == "" {
		return &Error{File: config.File, Err: fmt.Errorf("chart values: %w", ce.Err)}
	}
	return keepCause(fromTemplateError(ce.File, ce.Err), ce.Err)
}

// chartStopped is a chart's render that its context stopped: an *Error
// that is ErrDeadline, at the loop's file and line when the chart found
// its check, else where text/template's error says (the line of the tpl
// call whose text was running).
func chartStopped(err error, se *chart.StoppedError) error {
	de := &deadlineError{err: se.Err, cause: se.Cause}
	var ce *chart.Error
	if !errors.As(err, &ce) || ce.File == "" {
		return &Error{File: config.File, Err: de}
	}
	if ce.Line > 0 {
		return &Error{File: ce.File, Line: ce.Line, Err: de}
	}
	e := fromTemplateError(ce.File, ce.Err)
	return &Error{File: e.File, Line: e.Line, Err: de}
}

// chartParseError is chartError for a chart's template that does not
// parse, except that an unexpected end of the text is reported where the
// block that is not closed opens (parseError), as for a set's own
// templates.
func (s *Set) chartParseError(err error) error {
	var ce *chart.Error
	if errors.As(err, &ce) && ce.File != "" {
		if src, ok := s.sources[s.chart.DiskPath(ce.File)]; ok {
			return keepCause(parseError(ce.File, src, ce.Err), ce.Err)
		}
	}
	return chartError(err)
}

// release is the chart release a parent is at (hook.Next): the revision
// its status.release records while what it renders (the set and the
// spec) has the same digest, the next one when that changed, 1 (the
// install) when none is recorded.
func (s *Set) release(parent *unstructured.Unstructured) (hook.Release, error) {
	st, _ := parent.Object["status"].(map[string]any)
	rec, err := hook.RecordOf(st)
	if err != nil {
		return hook.Release{}, &Error{File: config.File, Err: fmt.Errorf("the parent's chart release: %w", err)}
	}
	s.fpOnce.Do(func() { s.fp = s.Fingerprint() })
	digest, err := hook.Digest(s.fp, parent.Object["spec"])
	if err != nil {
		return hook.Release{}, &Error{File: config.File, Err: err}
	}
	return hook.Next(rec, digest), nil
}

// onDisk names, in a chart set's error, the files by their path in the
// set (chart/templates/_helpers.tpl:85) instead of Helm's name for them
// (web/templates/_helpers.tpl:85; see chart.DiskPath). Any other error is
// returned as it is.
func (s *Set) onDisk(err error) error {
	var e *Error
	if s.chart == nil || !errors.As(err, &e) || error(e) != err {
		return err
	}
	out := *e
	out.File = s.chart.DiskPath(e.File)
	if msg := e.Err.Error(); s.chart.DiskPaths(msg) != msg {
		out.Err = &causedError{text: s.chart.DiskPaths(msg), cause: e.Err}
	}
	return &out
}

// helmValues is the parent's spec as Helm reads a values file: every
// number a float64 (so that a template prints 1000000 as 1e+06, as under
// Helm), copied so that templates cannot change the parent.
func helmValues(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = helmValues(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = helmValues(e)
		}
		return out
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case int32:
		return float64(x)
	}
	return v
}

// chartFiles renders a chart set's templates for parent, recording its
// lookups in st. NOTES.txt files are never children (Helm never installs
// them); the root chart's is returned apart when loom.yaml asks for it
// (notes: true). So are the generating functions' values
// (chart.Result.Generated).
func (s *Set) chartFiles(parent *unstructured.Unstructured, rel hook.Release, st *lookupState, r *renderer) ([]chart.File, string, map[string]string, error) {
	spec, _ := parent.Object["spec"].(map[string]any)
	values, _ := helmValues(spec).(map[string]any)
	if values == nil {
		values = map[string]any{}
	}
	var seed Seed
	if s.seeded {
		var err error
		if seed, err = seedOf(parent, st.reader); err != nil {
			return nil, "", nil, &Error{File: config.File, Err: fmt.Errorf("the chart's random functions need the parent's seed: %w", err)}
		}
	}
	caps, err := capabilitiesOf(st.reader)
	if err != nil {
		return nil, "", nil, &Error{File: config.File, Err: fmt.Errorf("the cluster's capabilities (.Capabilities): %w", err)}
	}
	ctx := r.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	res, err := s.chart.RenderContext(ctx, values, chart.Env{
		Release: chart.Release{Name: parent.GetName(), Namespace: parent.GetNamespace(),
			Revision: int(rel.Revision), IsInstall: rel.Install},
		Seed:         seed.Bytes,
		Kept:         seed.Kept,
		Capabilities: caps,
		// Loom manages the children: a chart's managed-by label says so,
		// and agrees with the label Loom sets.
		Service: object.ManagedByValue,
		Lookup: func(at chart.Position, apiVersion, kind, namespace, name string) (map[string]any, error) {
			if at.FromSpec {
				if err := st.refuseFromSpec(apiVersion, kind, namespace, name); err != nil {
					return nil, err
				}
			}
			st.file = at.File
			return st.lookup(at.Offset, apiVersion, kind, namespace, name)
		},
		Writer: func(w io.Writer) io.Writer { return &capWriter{w: w, r: r} },
		Omit:   s.omitted,
	})
	if err != nil {
		if se := (*chart.StoppedError)(nil); errors.As(err, &se) {
			return nil, "", nil, chartStopped(err, se)
		}
		if errors.Is(err, errOutputTooLarge) {
			var ce *chart.Error
			errors.As(err, &ce)
			return nil, "", nil, &Error{File: ce.File, Err: errOutputTooLarge}
		}
		return nil, "", nil, chartError(err)
	}
	var files []chart.File
	var notes string
	for _, f := range res.Files {
		// Helm splits documents at any line that starts with "---" (even
		// "---kind: X"); Loom's splitter wants "---" alone.
		if strings.Contains(f.Text, "---") {
			f.Text = helmSeparator.ReplaceAllString(f.Text, "---\n")
		}
		if chart.NotesFile(f.Name) {
			if s.Config.Notes && f.Name == s.chart.Name()+"/templates/NOTES.txt" {
				notes = f.Text
			}
			continue
		}
		files = append(files, f)
	}
	return files, notes, res.Generated, nil
}

// helmSeparator is where Helm 4 splits a file into documents.
var helmSeparator = regexp.MustCompile(`(?m)^---[ \t]*`)

// Seed is what a parent's seed holds: the bytes a chart's random
// functions take their values from (see chart.SeededFuncs), and the
// values its generating functions made in earlier renders (see
// chart.GeneratedFuncs, Output.Generated).
type Seed struct {
	Bytes []byte
	Kept  map[string]string
}

// Seeder gives a parent's seed: secret bytes, the same on every call for
// one parent and different for another, and the values kept with them.
// The controller's Reader is one: it keeps each parent's seed in a Secret
// of the parent's namespace.
type Seeder interface {
	Seed(parent *unstructured.Unstructured) (Seed, error)
}

// seedOf is the parent's seed from reader, or, for a Reader that keeps
// none (loom render, loom test), one made from the parent's namespace and
// name: the same random values on every offline render of that parent,
// and not the values the cluster's parent gets; generated keys and
// certificates are new in each process, as under helm template.
func seedOf(parent *unstructured.Unstructured, reader Reader) (Seed, error) {
	if s, ok := reader.(Seeder); ok {
		return s.Seed(parent)
	}
	sum := sha256.Sum256([]byte("loom offline seed\x00" + parent.GetNamespace() + "/" + parent.GetName()))
	return Seed{Bytes: sum[:]}, nil
}

// CapabilitiesReader gives what a chart's .Capabilities holds. The
// controller's Reader reads the cluster's discovery; an ObjectsReader
// holds what loom render's flags say. Without one, a chart sees Helm
// SDK's defaults, as under `helm template`.
type CapabilitiesReader interface {
	Capabilities() (*chart.Capabilities, error)
}

// capabilitiesOf is reader's capabilities, or nil (Helm's defaults).
func capabilitiesOf(reader Reader) (*chart.Capabilities, error) {
	if c, ok := reader.(CapabilitiesReader); ok {
		return c.Capabilities()
	}
	return nil, nil
}

// capWriter counts a chart's output against MaxOutputBytes.
type capWriter struct {
	w io.Writer
	r *renderer
}

func (c *capWriter) Write(p []byte) (int, error) {
	if err := c.r.count(len(p)); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// CRD is the parent's CRD for this set (crd.Generate), with, for a chart
// set without a schema in loom.yaml, the spec's schema inferred from the
// chart's values.yaml (crd.GenerateForChart). It was generated, and
// passed the API server's CRD validation, when the set loaded; each call
// returns a copy the caller may change.
func (s *Set) CRD() (*apiextv1.CustomResourceDefinition, error) {
	if s.crd != nil {
		return s.crd.DeepCopy(), nil
	}
	return s.generateCRD()
}

// generateCRD generates the set's CRD (see CRD).
func (s *Set) generateCRD() (*apiextv1.CustomResourceDefinition, error) {
	if s.chart != nil {
		return crd.GenerateForChart(s.Config, s.chart.ValuesYAML(), s.chart.Schema())
	}
	return crd.Generate(s.Config)
}
