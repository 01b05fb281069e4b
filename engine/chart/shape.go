package chart

import (
	"path"
	"strings"
	"text/template"

	ci "helm.sh/helm/v4/pkg/chart"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

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
