package chart

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// TestDiskPath maps Helm's names of a chart's files to their paths in the
// file system the chart was loaded from: a root folder not named as the
// chart, a subchart folder not named as its chart, an alias, and a
// subchart packed as a .tgz.
func TestDiskPath(t *testing.T) {
	dir := t.TempDir()
	packed := &chartv2.Chart{Metadata: &chartv2.Metadata{APIVersion: "v2", Name: "db", Version: "1.0.0"},
		Templates: nil}
	tgz, err := chartutil.Save(packed, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{
		"set/mychart/Chart.yaml": {Data: []byte(`apiVersion: v2
name: thing
version: 0.1.0
dependencies:
  - {name: sub, version: 0.1.0}
  - {name: sub, version: 0.1.0, alias: other}
  - {name: db, version: 1.0.0}
`)},
		"set/mychart/templates/a.yaml":               {Data: []byte("a: 1\n")},
		"set/mychart/charts/subdir/Chart.yaml":       {Data: []byte("apiVersion: v2\nname: sub\nversion: 0.1.0\n")},
		"set/mychart/charts/subdir/templates/b.yaml": {Data: []byte("b: 1\n")},
		"set/mychart/charts/" + filepath.Base(tgz):   {Data: b},
	}
	c, _, err := Load(fsys, "set/mychart", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, name := range []string{
		"thing/templates/a.yaml", "thing/values.schema.json", "thing/charts/sub/templates/b.yaml",
		"thing/charts/other/templates/b.yaml", "thing/charts/db/templates/c.yaml", "elsewhere/templates/x.yaml",
	} {
		got[name] = c.DiskPath(name)
	}
	want := map[string]string{
		"thing/templates/a.yaml":              "set/mychart/templates/a.yaml",
		"thing/values.schema.json":            "set/mychart/values.schema.json",
		"thing/charts/sub/templates/b.yaml":   "set/mychart/charts/subdir/templates/b.yaml",
		"thing/charts/other/templates/b.yaml": "set/mychart/charts/subdir/templates/b.yaml",
		"thing/charts/db/templates/c.yaml":    "set/mychart/charts/db-1.0.0.tgz/templates/c.yaml",
		"elsewhere/templates/x.yaml":          "elsewhere/templates/x.yaml",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DiskPath (-want +got):\n%s", diff)
	}
	msg := "thing/charts/sub/templates/b.yaml:3: x (included from thing/templates/a.yaml:1, something/templates/a.yaml:2)"
	wantMsg := "set/mychart/charts/subdir/templates/b.yaml:3: x (included from set/mychart/templates/a.yaml:1, something/templates/a.yaml:2)"
	if got := c.DiskPaths(msg); got != wantMsg {
		t.Errorf("DiskPaths:\n got %s\nwant %s", got, wantMsg)
	}
}
