package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"
)

// Chart is a loaded Helm chart with its subcharts. It is immutable after
// Load and safe for concurrent use.
type Chart struct {
	chart *chartv2.Chart
	// overrides replace functions of Helm's map (see Options.Funcs).
	overrides template.FuncMap
	// files caches each chart's .Files by its first file: a processed
	// copy of a chart, aliased or not, shares the loaded one's files.
	files map[*common.File]Files

	mu       sync.Mutex
	shapes   map[string]*shape
	prepared map[[32]byte]*prepared // by the hash of the values' JSON
	// shapeBytes and preparedBytes are the weights of shapes and prepared
	// (maxShapeBytes, maxPreparedBytes).
	shapeBytes    int
	preparedBytes int
	outputs       memo[*Result] // by outputKey

	// tplBytes is the weight of the tpl texts its renderers keep parsed
	// (maxTplBytes).
	tplBytes atomic.Int64

	// dirs are the charts' folders by Helm's path (see DiskPath).
	dirs map[string]string

	// authored are the chart's own strings (authoredTexts).
	authoredOnce sync.Once
	authored     map[string]bool
}

// Options tune how a chart is executed.
type Options struct {
	// Funcs replace functions of Helm's function map, by name, for
	// every template; include, tpl, required, fail and lookup are bound
	// per render and cannot be replaced.
	Funcs template.FuncMap
}

// Sources are the files a chart was loaded from, by their path in the
// file system given to Load.
type Sources map[string][]byte

// Load loads the chart at dir in fsys: a chart folder (its .helmignore
// applies, as in `helm template DIR`) or a .tgz archive. It returns the
// files it read, so that the same chart can be loaded again from them.
func Load(fsys fs.FS, dir string, opts Options) (*Chart, Sources, error) {
	dir = path.Clean(dir)
	src := Sources{}
	var c *chartv2.Chart
	if strings.HasSuffix(dir, ".tgz") || strings.HasSuffix(dir, ".tar.gz") {
		b, err := fs.ReadFile(fsys, dir)
		if err != nil {
			return nil, nil, fmt.Errorf("chart %s: %w", dir, err)
		}
		src[dir] = b
		if c, err = loader.LoadArchive(bytes.NewReader(b)); err != nil {
			return nil, nil, fmt.Errorf("chart %s: %w", dir, err)
		}
	} else {
		files, err := readDir(fsys, dir, src)
		if err != nil {
			return nil, nil, err
		}
		if c, err = loader.LoadFiles(files); err != nil {
			return nil, nil, fmt.Errorf("chart %s: %w", dir, err)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	out := &Chart{chart: c, overrides: opts.Funcs, files: map[*common.File]Files{}, shapes: map[string]*shape{}, prepared: map[[32]byte]*prepared{}}
	out.dirs = map[string]string{}
	out.diskDirs(c, c.Name(), dir, src)
	if err := checkSchemas(c); err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = out.DiskPath(ce.File)
		}
		return nil, nil, err
	}
	out.indexFiles(c)
	return out, src, nil
}

// readDir reads a chart folder as Helm's LoadDir does: .helmignore's
// rules and Helm's defaults (templates/.?*) leave files out.
func readDir(fsys fs.FS, dir string, src Sources) ([]*archive.BufferedFile, error) {
	rules := ignore.Empty()
	if b, err := fs.ReadFile(fsys, path.Join(dir, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(b)); err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", dir, ignore.HelmIgnore, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	rules.AddDefaults()
	var files []*archive.BufferedFile
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		n := strings.TrimPrefix(p, dir+"/")
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rules.Ignore(n, fi) {
				return fs.SkipDir
			}
			return nil
		}
		if rules.Ignore(n, fi) {
			return nil
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("chart %s: cannot load irregular file %s", dir, n)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		src[p] = b
		files = append(files, &archive.BufferedFile{Name: n, Data: b})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read chart %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("chart %s: no files", dir)
	}
	return files, nil
}

// indexFiles makes each chart's .Files once.
func (c *Chart) indexFiles(ch *chartv2.Chart) {
	if len(ch.Files) > 0 {
		f := make(Files, len(ch.Files))
		for _, file := range ch.Files {
			f[file.Name] = file.Data
		}
		c.files[ch.Files[0]] = f
	}
	for _, d := range ch.Dependencies() {
		c.indexFiles(d)
	}
}

// Name is the chart's name, from Chart.yaml.
func (c *Chart) Name() string { return c.chart.Name() }

// ValuesYAML is the root chart's values.yaml, as loaded.
func (c *Chart) ValuesYAML() map[string]any { return c.chart.Values }

// Schema is the root chart's values.schema.json, or nil.
func (c *Chart) Schema() []byte { return c.chart.Schema }

// copyTree copies what ProcessDependencies changes: each chart's
// metadata (its dependency list and their flags), its list of subcharts
// and its Values (replaced, never mutated, by import-values). Templates
// and files are shared.
func copyTree(c *chartv2.Chart) *chartv2.Chart {
	out := *c
	md := *c.Metadata
	if c.Metadata.Dependencies != nil {
		md.Dependencies = make([]*chartv2.Dependency, len(c.Metadata.Dependencies))
		for i, d := range c.Metadata.Dependencies {
			dd := *d
			md.Dependencies[i] = &dd
		}
	}
	out.Metadata = &md
	deps := c.Dependencies()
	out.SetDependencies()
	for _, d := range deps {
		out.AddDependency(copyTree(d))
	}
	return &out
}

// filesOf is a chart's .Files.
func (c *Chart) filesOf(ch *chartv2.Chart) Files {
	if len(ch.Files) == 0 {
		return Files{}
	}
	if f, ok := c.files[ch.Files[0]]; ok {
		return f
	}
	f := make(Files, len(ch.Files))
	for _, file := range ch.Files {
		f[file.Name] = file.Data
	}
	return f
}

// CRDFiles are the files in crds/ of the chart and of every subchart (as
// Helm's CRDObjects lists them), named by their path in the chart tree.
func (c *Chart) CRDFiles() []File {
	var out []File
	for _, crd := range c.chart.CRDObjects() {
		out = append(out, File{Name: crd.Filename, Text: string(crd.File.Data)})
	}
	return out
}
