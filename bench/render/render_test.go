package renderbench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/render"
)

const (
	loomSet   = "../../templates/myresource"
	helmChart = "testdata/chart"
	// distinct is how many different parents the cold benchmarks cycle
	// through: more than Loom's decode cache holds per template, so that
	// every render misses it.
	distinct = 100_000
)

// spec is the full example's spec (templates/myresource/tests/full.yaml),
// with n in the config so that each n gives different output.
func spec(n int) map[string]any {
	return map[string]any{
		"image":    "nginx:1.27",
		"replicas": int64(3),
		"memory":   "128Mi",
		"port":     int64(8080),
		"config": map[string]any{
			"LOG_LEVEL": "info",
			"GREETING":  fmt.Sprintf("hello from loom %d", n),
		},
	}
}

// parent is MyResource web-n, as an informer would hand it over.
func parent(n int) *unstructured.Unstructured {
	name := fmt.Sprintf("web-%d", n)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1",
		"kind":       "MyResource",
		"metadata": map[string]any{
			"name":      name,
			"namespace": "default",
			"uid":       "00000000-0000-0000-0000-" + fmt.Sprintf("%012d", n),
			"labels":    map[string]any{"team": "storefront"},
		},
		"spec": spec(n),
	}}
}

// parents returns min(b.N, distinct) different parents.
func parents(b *testing.B) []*unstructured.Unstructured {
	ps := make([]*unstructured.Unstructured, min(b.N, distinct))
	for i := range ps {
		ps[i] = parent(i)
	}
	return ps
}

func wantChildren(b *testing.B, n int) {
	if n != 3 {
		b.Fatalf("rendered %d children, want 3", n)
	}
}

// BenchmarkRender renders one parent per iteration into decoded objects.
func BenchmarkRender(b *testing.B) {
	b.Run("helm", func(b *testing.B) {
		ch := loadChart(b)
		values := spec(0)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			wantChildren(b, len(helmRender(b, ch, "web-0", values)))
		}
	})
	b.Run("helm-distinct", func(b *testing.B) {
		ch := loadChart(b)
		ps := parents(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			p := ps[i%len(ps)]
			wantChildren(b, len(helmRender(b, ch, p.GetName(), p.Object["spec"].(map[string]any))))
		}
	})
	b.Run("loom-warm", func(b *testing.B) {
		set := loadSet(b)
		p := parent(0)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			out, err := set.Render(p)
			if err != nil {
				b.Fatal(err)
			}
			wantChildren(b, len(out))
		}
	})
	b.Run("loom-cold", func(b *testing.B) {
		set := loadSet(b)
		ps := parents(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			out, err := set.Render(ps[i%len(ps)])
			if err != nil {
				b.Fatal(err)
			}
			wantChildren(b, len(out))
		}
	})
	b.Run("text-template-sigs-yaml", func(b *testing.B) {
		t := parseTextTemplates(b)
		ps := parents(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			p := ps[i%len(ps)]
			wantChildren(b, len(textTemplateRender(b, t, p)))
		}
	})
}

func loadSet(b *testing.B) *render.Set {
	set, err := render.Load(loomSet)
	if err != nil {
		b.Fatal(err)
	}
	return set
}

func loadChart(b *testing.B) *chart.Chart {
	ch, err := loader.Load(helmChart)
	if err != nil {
		b.Fatal(err)
	}
	return ch
}

// helmRender is what a Helm-based operator does per parent: coalesce the
// values, render every template, split the manifests and decode each one.
func helmRender(b *testing.B, ch *chart.Chart, name string, values map[string]any) []*unstructured.Unstructured {
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{
		Name: name, Namespace: "default", Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		b.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		b.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, content := range files {
		for _, m := range releaseutil.SplitManifests(content) {
			if strings.TrimSpace(m) == "" {
				continue
			}
			obj := map[string]any{}
			if err := yaml.Unmarshal([]byte(m), &obj); err != nil {
				b.Fatal(err)
			}
			if len(obj) > 0 {
				objs = append(objs, &unstructured.Unstructured{Object: obj})
			}
		}
	}
	return objs
}

// parseTextTemplates parses Loom's set once with plain text/template and
// sprig, plus the include, required and lookup that its templates use.
func parseTextTemplates(b *testing.B) *template.Template {
	t := template.New("set")
	funcs := sprig.TxtFuncMap()
	funcs["include"] = func(name string, data any) (string, error) {
		var sb strings.Builder
		err := t.ExecuteTemplate(&sb, name, data)
		return sb.String(), err
	}
	funcs["required"] = func(msg string, v any) (any, error) {
		if v == nil || v == "" {
			return nil, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	// Helm's and Loom's offline answer: nothing is found.
	funcs["lookup"] = func(...any) map[string]any { return map[string]any{} }
	t.Funcs(funcs)
	for _, f := range []string{"_helpers.tpl", "configmap.yaml", "deployment.yaml", "service.yaml"} {
		src, err := os.ReadFile(filepath.Join(loomSet, f))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := t.New(f).Parse(string(src)); err != nil {
			b.Fatal(err)
		}
	}
	return t
}

// textTemplateRender executes the pre-parsed templates and decodes the
// output with sigs.k8s.io/yaml: the floor for an engine that parses once
// but decodes like Helm, without validation or injection.
func textTemplateRender(b *testing.B, t *template.Template, p *unstructured.Unstructured) []*unstructured.Unstructured {
	data := map[string]any{"Spec": p.Object["spec"], "Name": p.GetName()}
	var objs []*unstructured.Unstructured
	for _, f := range []string{"configmap.yaml", "deployment.yaml", "service.yaml"} {
		var sb strings.Builder
		if err := t.ExecuteTemplate(&sb, f, data); err != nil {
			b.Fatal(err)
		}
		for _, m := range strings.Split(sb.String(), "\n---") {
			if strings.TrimSpace(m) == "" {
				continue
			}
			obj := map[string]any{}
			if err := yaml.Unmarshal([]byte(m), &obj); err != nil {
				b.Fatal(err)
			}
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
	return objs
}
