package chart

import (
	"bytes"
	"path"
	"regexp"
	"sort"
	"strings"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"
)

// Helm names a template by the chart's name, not by its folder:
// web/templates/x.yaml, web/charts/db/templates/y.yaml. A chart's folder
// on disk may be named otherwise (chart/, charts/postgresql-12.1.0/, an
// alias), so errors would point at files that do not exist. diskDirs maps
// each chart of the tree, by Helm's path (ChartFullPath, and its aliases),
// to its folder in the file system Load read (a .tgz stands for a folder:
// chart/charts/db-1.0.0.tgz/templates/y.yaml).

// diskDirs fills c.dirs for ch, whose folder is dir, and its subcharts.
func (c *Chart) diskDirs(ch *chartv2.Chart, helmPath, dir string, src Sources) {
	c.dirs[helmPath] = dir
	for _, d := range ch.Dependencies() {
		sub := findSubchart(dir, d.Name(), src)
		c.diskDirs(d, path.Join(helmPath, "charts", d.Name()), sub, src)
		for _, dep := range ch.Metadata.Dependencies {
			if dep.Name == d.Name() && dep.Alias != "" {
				c.diskDirs(d, path.Join(helmPath, "charts", dep.Alias), sub, src)
			}
		}
	}
}

// findSubchart is the folder or archive under dir/charts that holds the
// subchart named name, as Helm's loader found it: a folder whose
// Chart.yaml names it, or an archive whose chart it is. Inside an archive
// (no sources) it is charts/NAME.
func findSubchart(dir, name string, src Sources) string {
	prefix := dir + "/charts/"
	var names []string
	for p := range src {
		if strings.HasPrefix(p, prefix) {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	for _, p := range names {
		rest := strings.TrimPrefix(p, prefix)
		switch {
		case strings.Count(rest, "/") == 1 && strings.HasSuffix(rest, "/Chart.yaml"):
			var meta struct{ Name string }
			if yaml.Unmarshal(src[p], &meta) == nil && meta.Name == name {
				return path.Dir(p)
			}
		case !strings.Contains(rest, "/") && (strings.HasSuffix(rest, ".tgz") || strings.HasSuffix(rest, ".tar.gz")):
			if ch, err := loader.LoadArchive(bytes.NewReader(src[p])); err == nil && ch.Name() == name {
				return p
			}
		}
	}
	return prefix + name
}

// DiskPath is the path, in the file system Load read, of the file that
// Helm names name (a template's path, or a chart's values.schema.json):
// web/templates/x.yaml is chart/templates/x.yaml for a chart in folder
// chart. A name under no chart of the tree is returned as it is.
func (c *Chart) DiskPath(name string) string {
	best := ""
	for hp := range c.dirs {
		if (name == hp || strings.HasPrefix(name, hp+"/")) && len(hp) > len(best) {
			best = hp
		}
	}
	if best == "" {
		return name
	}
	return c.dirs[best] + strings.TrimPrefix(name, best)
}

// helmFile matches a file Helm names in a message: a chart path and
// templates/... or values.schema.json, not inside a longer word.
var helmFile = regexp.MustCompile(`(^|[^\w./-])([\w.-]+(?:/charts/[\w.-]+)*/(?:templates/[^\s:"]+|values\.schema\.json))`)

// DiskPaths rewrites every file Helm names in msg (see DiskPath).
func (c *Chart) DiskPaths(msg string) string {
	return helmFile.ReplaceAllStringFunc(msg, func(m string) string {
		sub := helmFile.FindStringSubmatch(m)
		return sub[1] + c.DiskPath(sub[2])
	})
}
