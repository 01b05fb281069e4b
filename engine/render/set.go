package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing/fstest"
	"text/template"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/chart"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/rbac/roles"
	"github.com/loom-operator/loom/engine/render/convert"
	"github.com/loom-operator/loom/engine/render/deadline"
	"github.com/loom-operator/loom/engine/render/doccache"
	"github.com/loom-operator/loom/engine/render/hermetic"
	"github.com/loom-operator/loom/engine/render/kinds"
	"github.com/loom-operator/loom/engine/render/modes"
	"github.com/loom-operator/loom/engine/render/schemacheck"
	"github.com/loom-operator/loom/engine/render/tmpltree"
)

// TestsDir is the folder inside a set that holds golden-file test cases.
const TestsDir = "tests"

// Set is a parsed template set. It is immutable after Load and safe for
// concurrent use.
type Set struct {
	// Name is the folder's base name.
	Name string
	// Dir is the folder the set was loaded from.
	Dir string
	// Config is the parsed loom.yaml.
	Config config.Config

	gvk     schema.GroupVersionKind
	root    *template.Template
	files   []string // child templates, in name order
	sources map[string][]byte
	pool    rendererPool
	caches  map[string]*doccache.Cache // per child template file

	// chart renders the children of a chart set (loom.yaml's chart);
	// chartTexts are its templates' sources, by path in the chart.
	chart      *chart.Chart
	chartTexts map[string][]byte
	// omitted are the chart's template files whose every document is a
	// hook Loom never applies (hook.NeverAppliedFile): never executed.
	omitted map[string]bool
	// fpOnce computes fp, the Fingerprint that a chart's release digest
	// covers, once: the sources do not change after the load.
	fpOnce  sync.Once
	fp      string
	seeded  bool        // the chart calls a random function (chart.SeededFuncs)
	roles   roles.Found // the roles and roleRefs the templates write
	cacheMu sync.Mutex  // guards caches for a chart set, filled as files render

	// crd is the parent's CRD, generated and validated at load.
	crd *apiextv1.CustomResourceDefinition
	// kinds are the kinds the templates name (kinds.Named) and those
	// loom.yaml declares: a child of any other kind is refused.
	kinds     map[schema.GroupKind]bool
	converter *convert.Converter // nil for a set of one version
}

// Fingerprint is a hash of every file the set was parsed from, loom.yaml
// included. Two loads of unchanged files have the same fingerprint.
func (s *Set) Fingerprint() string {
	names := make([]string, 0, len(s.sources))
	for n := range s.sources {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(s.sources[n]))
		h.Write(s.sources[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Revision names the set's content: the first 10 hex digits of its
// Fingerprint. A rollout moves parents from one revision to another.
func (s *Set) Revision() string { return s.Fingerprint()[:10] }

// Sources returns a copy of every file the set was parsed from, by name,
// loom.yaml included: LoadFS over them loads the same set.
func (s *Set) Sources() map[string][]byte {
	out := make(map[string][]byte, len(s.sources))
	for n, b := range s.sources {
		out[n] = append([]byte(nil), b...)
	}
	return out
}

// ParentGVK returns the parent kind named in loom.yaml.
func (s *Set) ParentGVK() schema.GroupVersionKind { return s.gvk }

// Files returns the names of the templates that render children.
func (s *Set) Files() []string { return append([]string(nil), s.files...) }

// HasStatus reports whether the set has a status template.
func (s *Set) HasStatus() bool { return s.Config.Status != "" }

// Load parses the template set in dir. Files whose names start with "_" are
// partials that hold define blocks; every other *.yaml file renders children,
// except the status template named in loom.yaml. The tests folder is ignored.
func Load(dir string) (*Set, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &Error{Err: errors.New("no such folder")}
	case err != nil:
		return nil, &Error{Err: err}
	case !fi.IsDir():
		return nil, &Error{Err: errors.New("not a folder: a template set is the folder that holds loom.yaml")}
	}
	return LoadFS(os.DirFS(dir), dir)
}

// LoadFS is Load over a file system; dir is used only to name the set.
func LoadFS(fsys fs.FS, dir string) (*Set, error) {
	s := &Set{Name: filepath.Base(dir), Dir: dir, sources: map[string][]byte{}}
	raw, err := fs.ReadFile(fsys, config.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{File: config.File, Err: fmt.Errorf("there is no %s in %s: it is not a template set's folder", config.File, dir)}
	}
	if err != nil {
		return nil, &Error{File: config.File, Err: err}
	}
	if s.Config, err = config.Parse(raw); err != nil {
		e := &Error{File: config.File, Err: err}
		if u := (*config.UnknownFieldError)(nil); errors.As(err, &u) {
			e.Line = u.Line
		}
		return nil, e
	}
	s.gvk = s.Config.ParentGVK()
	s.sources[config.File] = raw
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, &Error{File: ".", Err: err}
	}
	var partials []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || name == config.File || strings.HasPrefix(name, ".") || slices.Contains(s.Config.ConversionTemplates(), name) {
			continue
		}
		switch {
		case strings.HasPrefix(name, "_"):
			partials = append(partials, name)
		case name == s.Config.Status:
		case strings.HasSuffix(name, ".yaml") && s.Config.Chart != "":
			return nil, &Error{File: name, Err: fmt.Errorf("a set whose %s names a chart renders the chart's templates only: move %s into the chart's templates/ folder", config.File, name)}
		case strings.HasSuffix(name, ".yaml"):
			s.files = append(s.files, name)
		default:
			continue
		}
		if s.sources[name], err = fs.ReadFile(fsys, name); err != nil {
			return nil, &Error{File: name, Err: err}
		}
	}
	if s.Config.Status != "" {
		if s.sources[s.Config.Status], err = fs.ReadFile(fsys, s.Config.Status); err != nil {
			return nil, &Error{File: config.File, Err: fmt.Errorf("status template: %w", err)}
		}
	}
	for _, f := range s.Config.ConversionTemplates() {
		if s.sources[f], err = fs.ReadFile(fsys, f); err != nil {
			return nil, &Error{File: config.File, Line: s.findLine(config.File, 1, f), Err: fmt.Errorf("conversion template: %w", err)}
		}
	}
	if len(s.files) == 0 && s.Config.Chart == "" {
		return nil, &Error{File: ".", Err: errors.New("template set has no *.yaml templates")}
	}
	sort.Strings(s.files)
	sort.Strings(partials)
	if err := s.parse(partials); err != nil {
		return nil, err
	}
	if s.Config.Chart != "" {
		if err := s.loadChart(fsys); err != nil {
			return nil, err
		}
	} else if err := s.checkSpec(); err != nil {
		return nil, err
	}
	// Every command refuses a set whose CRD the API server would refuse,
	// not only loom crd (and the controller before it installs it). A
	// parent of a built-in kind (a ConfigMap) has no CRD to check.
	if !kinds.Builtin(s.gvk) {
		if s.crd, err = s.generateCRD(); err != nil {
			return nil, &Error{File: config.File, Err: err}
		}
	}
	if s.converter, err = convert.New(s.Config, conversionTemplates{s}); err != nil {
		return nil, &Error{File: config.File, Line: s.findLine(config.File, 1, convert.MovePath(err)), Err: err}
	}
	if err := s.checkKinds(); err != nil {
		return nil, err
	}
	s.kinds = kinds.Named(s.ChildTexts())
	for gk := range s.Config.ClusterScopedKinds() {
		s.kinds[gk] = true
	}
	s.caches = make(map[string]*doccache.Cache, len(s.files))
	for _, f := range s.files {
		s.caches[f] = doccache.New(doccache.DefaultBytes)
	}
	s.roles = roles.Scan(s.ChildTexts())
	deadline.Guard(s.root, nil) // after every check that reads the trees
	s.pool.init(s.root)
	return s, nil
}

// parse builds one template tree holding every file, so that include and
// template can reach any define block in the set. Partials must render
// nothing but whitespace outside their define blocks.
func (s *Set) parse(partials []string) error {
	s.root = template.New(s.Name).Funcs(funcMap(nil)).Option("missingkey=default")
	names := append(append([]string(nil), partials...), s.files...)
	if s.Config.Status != "" {
		names = append(names, s.Config.Status)
	}
	names = append(names, s.Config.ConversionTemplates()...)
	for _, name := range names {
		if _, err := s.root.New(name).Parse(string(s.sources[name])); err != nil {
			return parseError(name, s.sources[name], err)
		}
	}
	if err := checkRefused(s.root, s.sources); err != nil {
		return err
	}
	for _, name := range partials {
		var buf bytes.Buffer
		if err := s.root.ExecuteTemplate(&buf, name, nil); err == nil && len(bytes.TrimSpace(buf.Bytes())) > 0 {
			return &Error{File: name, Line: tmpltree.StrayLine(s.root.Lookup(name).Tree), Err: errors.New("a partial may only hold define blocks, but it renders text outside them")}
		}
	}
	return nil
}

// checkSpec checks what the templates read of the parent's spec against
// the spec's schema, when loom.yaml has one (see checkSchema).
func (s *Set) checkSpec() error {
	if s.Config.Schema == nil {
		return nil
	}
	spec, err := crd.SpecSchema(s.Config)
	if err != nil {
		return &Error{File: config.File, Err: err}
	}
	if spec == nil {
		return nil
	}
	return s.checkSchema(spec)
}

// checkSchema checks every path into the parent's spec that the set's
// templates read against spec (see schemacheck.Check), and returns an
// *Error at the template's file and line for each path the schema cannot
// hold, joined and sorted by file and line.
func (s *Set) checkSchema(spec *apiextv1.JSONSchemaProps) error {
	problems := schemacheck.Check(schemacheck.Templates{
		Root:    s.root,
		Files:   s.Files(),
		Status:  s.Config.Status,
		Kind:    s.gvk.Kind,
		Sources: s.sources,
	}, spec)
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = &Error{File: p.File, Line: p.Line, Err: errors.New(p.Msg)}
	}
	return errors.Join(errs...)
}

// SetError is the failure to load one template set.
type SetError struct {
	// Dir is the set's folder.
	Dir string
	// Err is why it failed.
	Err error
}

// Error names the set.
func (e *SetError) Error() string { return "load template set " + e.Dir + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *SetError) Unwrap() error { return e.Err }

// ErrNoSets is returned by LoadAll when root holds no template set.
var ErrNoSets = errors.New("no template sets")

// LoadAll finds every template set under root, recursively: each folder that
// holds a loom.yaml is one set. Sets are returned in path order. Sets that
// fail to load are left out, and each failure is a *SetError in the joined
// error; the sets that loaded are returned all the same.
func LoadAll(root string) ([]*Set, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if p == root && errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: no such file or folder", root)
		}
		if err != nil {
			return err
		}
		// Skip test cases, and hidden folders such as the timestamped
		// copies a ConfigMap volume keeps beside its ..data symlink.
		if d.IsDir() && p != root && (d.Name() == TestsDir || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == config.File {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w (folders with %s) under %s", ErrNoSets, config.File, root)
	}
	sets := make([]*Set, 0, len(dirs))
	var errs []error
	for _, d := range dirs {
		s, err := Load(d)
		if err != nil {
			errs = append(errs, &SetError{Dir: d, Err: err})
			continue
		}
		sets = append(sets, s)
	}
	return sets, errors.Join(errs...)
}

// LoadSources loads a set from its files held in memory, as Sources
// returned them (a revision kept in the cluster); dir names the set.
func LoadSources(dir string, files map[string][]byte) (*Set, error) {
	fsys := fstest.MapFS{}
	for name, b := range files {
		fsys[name] = &fstest.MapFile{Data: b}
	}
	return LoadFS(fsys, dir)
}

// checkKinds refuses a set whose templates name a kind that cannot be
// known without rendering (see kinds.ScanKinds).
func (s *Set) checkKinds() error {
	var me *modes.LineError
	if err := modes.Scan(s.ChildTexts(), s.Config.Manage); errors.As(err, &me) {
		return &Error{File: me.File, Line: me.Line, Err: me.Err}
	}
	_, err := kinds.ScanKinds(s.ChildTexts())
	var ce *kinds.ComputedError
	if errors.As(err, &ce) {
		return &Error{File: ce.File, Line: ce.Line, Err: &causedError{text: ce.Reason(), cause: ce}}
	}
	var le *kinds.LineError
	if errors.As(err, &le) {
		return &Error{File: le.File, Line: le.Line, Err: le.Err}
	}
	return err
}

// checkRefused refuses a set whose templates call a function whose value
// differs on every render (hermetic.Check), as a render Error at the call.
func checkRefused(t *template.Template, sources map[string][]byte) error {
	err := hermetic.Check(t, sources)
	var ce *hermetic.CallError
	if errors.As(err, &ce) {
		return &Error{File: ce.File, Line: ce.Line, Err: ce.Err}
	}
	return err
}
