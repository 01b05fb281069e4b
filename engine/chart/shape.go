package chart

import (
	"path"
	"strings"
	"sync/atomic"
	"text/template"

	ci "helm.sh/helm/v4/pkg/chart"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/loom-operator/loom/engine/render/deadline"
)

// maxShapes bounds the parsed shapes kept per chart, in number and in
// bytes: which subcharts are enabled is the values' choice, so a tenant
// picks among as many shapes as the chart's conditions make. A shape is
// counted as tplWeight times its templates' text; past the bounds, other
// shapes are dropped (any, the first one kept whatever its weight).
const (
	maxShapes     = 32
	maxShapeBytes = 64 << 20
)

// shape is the parsed templates of one set of enabled subcharts.
type shape struct {
	root  *template.Template
	pool  chan *renderer
	c     *Chart
	sites []site // the random functions' calls, renamed (markSites)
	// cached is true while the chart keeps the shape; the renderers of
	// one it does not keep are not pooled.
	cached atomic.Bool
	weight int // what it is counted in maxShapeBytes
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
	weight := 0
	for _, name := range order {
		if _, err := root.New(name).Parse(string(tpls[name].text)); err != nil {
			return nil, &Error{File: name, Err: err}
		}
		weight += tplWeight * len(tpls[name].text)
	}
	// Once, before any clone: the trees are shared by every renderer's
	// clone (see deadline.go).
	deadline.Guard(root, nil)
	sites := markSites(root)
	stubs := template.FuncMap{}
	for i := range sites {
		stubs[siteFunc(i)] = func(...any) (any, error) { return nil, errOutside }
	}
	root.Funcs(stubs)
	sh = &shape{root: root, pool: make(chan *renderer, 8), c: c, sites: sites, weight: weight}
	c.mu.Lock()
	defer c.mu.Unlock()
	if other := c.shapes[key]; other != nil {
		return other, nil // parsed meanwhile by another render
	}
	for k, old := range c.shapes {
		if len(c.shapes) < maxShapes && c.shapeBytes+weight <= maxShapeBytes {
			break
		}
		delete(c.shapes, k)
		c.shapeBytes -= old.weight
		old.cached.Store(false)
		old.drain()
	}
	sh.cached.Store(true)
	c.shapes[key] = sh
	c.shapeBytes += weight
	return sh, nil
}

// drain empties the shape's pool, returning what its renderers' parsed
// tpl texts held to the chart's budget. The caller holds c.mu.
func (sh *shape) drain() {
	for {
		select {
		case r := <-sh.pool:
			sh.c.tplBytes.Add(-r.tplBytes)
		default:
			return
		}
	}
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
