package renderbench

import (
	"fmt"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	cutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	enginev4 "helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/render"
)

// chartSets are chart sets (loom.yaml with chart:) over charts written
// for Loom's differential tests. app is a typical application chart: a
// library of helpers, as most production charts have, and optional parts
// off by default. web is dense with features: subcharts two deep,
// aliases, globals, import-values, .Files, tpl, hooks, toToml and
// toYamlPretty in nearly every line.
var chartSets = []struct {
	name, dir, kind string
	children        int
}{
	{name: "app", dir: "testdata/appset", kind: "App", children: 9},
	{name: "web", dir: "../../engine/render/testdata/chartsets/web", kind: "WebApp", children: 11},
}

// chartParent is a parent whose spec changes one value per n, so that
// the cold benchmark misses Loom's caches.
func chartParent(kind string, n int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1",
		"kind":       kind,
		"metadata":   map[string]any{"name": "shop", "namespace": "default", "uid": "u-shop", "generation": int64(1)},
		"spec":       map[string]any{"replicaCount": int64(n%50 + 1), "podLabels": map[string]any{"n": fmt.Sprint(n)}},
	}}
}

// BenchmarkChart compares a chart set's whole render (values coalesced
// and checked against values.schema.json, subcharts processed, templates
// executed, output decoded into validated children) with Helm 4's
// engine.Render alone on the same chart and values, the values prepared
// once outside the loop: the strictest baseline, since it decodes
// nothing. warm renders one parent again and again, as the controller
// does on its children's events; cold gives every render new values.
// make bench prints each against helm-engine-render.
func BenchmarkChart(b *testing.B) {
	for _, cs := range chartSets {
		b.Run(cs.name+"/helm-engine-render", func(b *testing.B) {
			ch, err := loader.Load(filepath.Join(cs.dir, "chart"))
			if err != nil {
				b.Fatal(err)
			}
			values := chartParent(cs.kind, 1).Object["spec"].(map[string]any)
			if err := chartutil.ProcessDependencies(ch, values); err != nil {
				b.Fatal(err)
			}
			top, err := cutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: "shop", Namespace: "default", Revision: 1, IsInstall: true}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				files, err := enginev4.Render(ch, top)
				if err != nil || len(files) == 0 {
					b.Fatal(err)
				}
			}
		})
		for _, cold := range []bool{false, true} {
			name := cs.name + "/loom-warm"
			if cold {
				name = cs.name + "/loom-cold"
			}
			b.Run(name, func(b *testing.B) {
				set, err := render.Load(cs.dir)
				if err != nil {
					b.Fatal(err)
				}
				ps := make([]*unstructured.Unstructured, min(b.N, distinct))
				for i := range ps {
					ps[i] = chartParent(cs.kind, 0)
					if cold {
						ps[i] = chartParent(cs.kind, i)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					out, err := set.Render(ps[i%len(ps)])
					if err != nil {
						b.Fatal(err)
					}
					if len(out) != cs.children {
						b.Fatalf("rendered %d children, want %d", len(out), cs.children)
					}
				}
			})
		}
	}
}
