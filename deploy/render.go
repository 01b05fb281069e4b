package deploy

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	cutil "helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// Release names the release a render is for: its name names the objects,
// its namespace holds the namespaced ones.
type Release struct {
	Name, Namespace string
}

// ManifestRelease is the release deploy/loom.yaml is rendered for.
var ManifestRelease = Release{Name: "loom", Namespace: "loom-system"}

// ManifestValues are the values deploy/loom.yaml is rendered with: the
// chart's defaults, and the release namespace created (with its restricted
// Pod Security labels), which `helm install --create-namespace` does
// instead.
func ManifestValues() map[string]any {
	return map[string]any{"namespace": map[string]any{"create": true}}
}

// Doc is one rendered object.
type Doc struct {
	// Source is the template that rendered it, such as
	// loom/templates/deployment.yaml.
	Source string
	// Kind and Name are read from its head.
	Kind, Name string
	// Content is its YAML.
	Content string
}

// ChartDir is the chart's folder in the repository.
func ChartDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "chart")
}

// Load loads the chart folder dir, as `helm template DIR` does (.helmignore
// applies).
func Load(dir string) (*chartv2.Chart, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	return ch, nil
}

// Render renders ch for rel with values over the chart's values.yaml,
// validated against values.schema.json, and returns the objects in Helm's
// install order. The chart has no hooks and no tests. Its lookups find
// nothing, as under `helm template`.
func Render(ch *chartv2.Chart, rel Release, values map[string]any) ([]Doc, error) {
	return RenderWith(ch, rel, values, nil)
}

// RenderWith is Render with the chart's lookups answered by cluster (nil:
// they find nothing), as `helm upgrade` answers them from the cluster.
func RenderWith(ch *chartv2.Chart, rel Release, values map[string]any, cluster engine.ClientProvider) ([]Doc, error) {
	opts := common.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true}
	top, err := cutil.ToRenderValuesWithSchemaValidation(ch, values, opts, common.DefaultCapabilities, false)
	if err != nil {
		return nil, fmt.Errorf("values of chart %s: %w", ch.Name(), err)
	}
	var files map[string]string
	if cluster != nil {
		files, err = engine.RenderWithClientProvider(ch, top, cluster)
	} else {
		files, err = engine.Render(ch, top)
	}
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", ch.Name(), err)
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("sort the objects of chart %s: %w", ch.Name(), err)
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("chart %s renders %d hooks: deploy/loom.yaml cannot hold them", ch.Name(), len(hooks))
	}
	docs := make([]Doc, 0, len(manifests))
	for _, m := range manifests {
		d := Doc{Source: m.Name, Content: strings.TrimSpace(m.Content) + "\n"}
		if m.Head != nil {
			d.Kind = m.Head.Kind
			if m.Head.Metadata != nil {
				d.Name = m.Head.Metadata.Name
			}
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// Manifest joins docs into one file for `kubectl apply -f`, each after a
// comment naming its template, below header.
func Manifest(header string, docs []Doc) []byte {
	var b strings.Builder
	b.WriteString(header)
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "# Source: %s\n%s", d.Source, d.Content)
	}
	return []byte(b.String())
}

// Objects decodes docs into plain maps, as an apply sends them.
func Objects(docs []Doc) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(docs))
	for _, d := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(d.Content), &obj); err != nil {
			return nil, fmt.Errorf("decode %s %s from %s: %w", d.Kind, d.Name, d.Source, err)
		}
		out = append(out, obj)
	}
	return out, nil
}
