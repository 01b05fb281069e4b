package chart

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	ci "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	cutil "helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// prepared is what Helm's functions make of one set of values: the chart
// with its enabled subcharts (aliased, their values imported), the
// coalesced values, checked against the schemas, and each chart's
// .Chart, in collect's order. It depends on nothing but the values, so it
// is kept, read-only, for the next render of the same values.
type prepared struct {
	key    [32]byte // the hash of the values' JSON
	weight int      // what it is counted in maxPreparedBytes
	ch     *chartv2.Chart
	values common.Values
	meta   []map[string]any
	order  []string
}

// maxPrepared bounds the prepared values kept per chart, in number and
// in bytes: values are parents' specs, whose size is a tenant's choice.
// A prepared render is counted as preparedWeight times its values' JSON
// (the coalesced maps take about that); one that weighs more than a
// quarter of the budget is not kept.
const (
	maxPrepared      = 64
	maxPreparedBytes = 16 << 20
	preparedWeight   = 2
)

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
	p.weight = preparedWeight * len(raw)
	if p.weight > maxPreparedBytes/4 {
		return p, nil
	}
	c.mu.Lock()
	for k, old := range c.prepared { // drop any, until p fits
		if len(c.prepared) < maxPrepared && c.preparedBytes+p.weight <= maxPreparedBytes {
			break
		}
		delete(c.prepared, k)
		c.preparedBytes -= old.weight
	}
	if _, ok := c.prepared[key]; !ok {
		c.prepared[key] = p
		c.preparedBytes += p.weight
	}
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
