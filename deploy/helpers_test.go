package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	_ "github.com/loom-operator/loom/internal/testflags"
)

// allOnValues is the values file that turns every option on.
var allOnValues = filepath.Join("chart", "ci", "all-on-values.yaml")

// testRelease is the release the unit tests render for.
var testRelease = Release{Name: "loom", Namespace: "ops"}

// rendered is what one render of the chart made.
type rendered struct {
	docs []Doc
	// objects are the typed built-in objects, by "Kind/name"; monitoring
	// kinds are in docs only.
	objects map[string]runtime.Object
}

// kinds counts the rendered objects by kind.
func (r rendered) kinds() map[string]int {
	out := map[string]int{}
	for _, d := range r.docs {
		out[d.Kind]++
	}
	return out
}

// deployment is the one Deployment the chart renders.
func (r rendered) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	for _, o := range r.objects {
		if d, ok := o.(*appsv1.Deployment); ok {
			return d
		}
	}
	t.Fatal("no Deployment rendered")
	return nil
}

// doc returns the rendered object of kind and name, or fails.
func (r rendered) doc(t *testing.T, kind, name string) Doc {
	t.Helper()
	for _, d := range r.docs {
		if d.Kind == kind && d.Name == name {
			return d
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return Doc{}
}

// readValues reads a values file, or values as YAML text.
func readValues(t *testing.T, fileOrYAML string) map[string]any {
	t.Helper()
	text := fileOrYAML
	if strings.HasSuffix(fileOrYAML, ".yaml") && !strings.Contains(fileOrYAML, "\n") {
		b, err := os.ReadFile(fileOrYAML)
		if err != nil {
			t.Fatal(err)
		}
		text = string(b)
	}
	v, err := common.ReadValues([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v.AsMap()
}

// loadChart loads the chart, with files added or replaced (by path in the
// chart, such as files/alerts/loom-rules.yaml).
func loadChart(t *testing.T, files map[string]string) *chartv2.Chart {
	t.Helper()
	ch, err := Load(ChartDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		replaced := false
		for _, f := range ch.Files {
			if f.Name == name {
				f.Data, replaced = []byte(text), true
			}
		}
		if !replaced {
			ch.Files = append(ch.Files, &common.File{Name: name, Data: []byte(text)})
		}
	}
	return ch
}

// render renders ch with values and decodes every built-in object strictly
// into its Go type: an unknown field or a wrong type fails the test.
func render(t *testing.T, ch *chartv2.Chart, values map[string]any) rendered {
	t.Helper()
	docs, err := Render(ch, testRelease, values)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, docs)
}

// decode decodes docs strictly into their Go types.
func decode(t *testing.T, docs []Doc) rendered {
	t.Helper()
	r := rendered{docs: docs, objects: map[string]runtime.Object{}}
	for _, d := range docs {
		var head struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := yaml.Unmarshal([]byte(d.Content), &head); err != nil {
			t.Fatalf("%s: %v", d.Source, err)
		}
		if strings.HasPrefix(head.APIVersion, "monitoring.coreos.com/") || strings.HasPrefix(head.APIVersion, "cert-manager.io/") {
			continue // no Go types here: the Prometheus Operator's and cert-manager's kinds
		}
		gv := strings.SplitN(head.APIVersion, "/", 2)
		group, version := "", gv[0]
		if len(gv) == 2 {
			group, version = gv[0], gv[1]
		}
		obj, err := scheme.Scheme.New(schemaGVK(group, version, d.Kind))
		if err != nil {
			t.Fatalf("%s %s from %s: %v", d.Kind, d.Name, d.Source, err)
		}
		if err := yaml.UnmarshalStrict([]byte(d.Content), obj); err != nil {
			t.Fatalf("%s %s from %s does not decode as its kind: %v\n%s", d.Kind, d.Name, d.Source, err, d.Content)
		}
		r.objects[d.Kind+"/"+d.Name] = obj
	}
	return r
}

func schemaGVK(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}
