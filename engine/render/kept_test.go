package render

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/internal/testutil"
)

// hookSet is a set over engine/chart's hook chart (a webhook with its
// own CA and certificate, and an htpasswd Secret), for a Webhook parent.
func hookSet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := testutil.CopyDir(filepath.Join("..", "chart", "testdata", "charts", "hook"), filepath.Join(dir, "chart")); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFiles(t, dir, map[string]string{"loom.yaml": `parent:
  apiVersion: example.loom.dev/v1alpha1
  kind: Webhook
chart: chart
clusterScoped:
  - {apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingWebhookConfiguration}
`})
	return dir
}

func webhook(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1", "kind": "Webhook",
		"metadata": map[string]any{"name": name, "namespace": "team-a", "uid": "u-" + name},
		"spec":     map[string]any{},
	}}
}

// A chart that calls htpasswd, genCA and genSignedCert loads and renders:
// the generating functions no longer refuse the set.
func TestChartGeneratingFunctionsRender(t *testing.T) {
	set, err := Load(hookSet(t))
	if err != nil {
		t.Fatalf("the set does not load: %v", err)
	}
	children, err := set.Render(webhook("a"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range children {
		kinds = append(kinds, c.GetKind()+"/"+c.GetName())
	}
	if got := strings.Join(kinds, " "); !strings.Contains(got, "Secret/a-hook-tls") || !strings.Contains(got, "Secret/a-hook-auth") ||
		!strings.Contains(got, "ValidatingWebhookConfiguration/a-hook") {
		t.Errorf("children %s", got)
	}
}

// A render returns the values its generating functions made
// (Output.Generated); given back as the seed's kept values, they render
// the same children, in another process too. Another parent's seed
// gives other values.
func TestChartGeneratedValuesAreKept(t *testing.T) {
	dir := hookSet(t)
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	reader := seedReader{Reader: NewObjectsReader(nil), seeds: map[string][]byte{"a": []byte("seed-of-a"), "b": []byte("seed-of-b")}, kept: map[string]map[string]string{}}
	first, err := set.RenderWith(webhook("a"), reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Generated) != 3 {
		t.Fatalf("generated values %v, want htpasswd's, genCA's and genSignedCert's", first.Generated)
	}
	reader.kept["a"] = first.Generated
	again, err := Load(dir) // another process
	if err != nil {
		t.Fatal(err)
	}
	second, err := again.RenderWith(webhook("a"), reader)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first.Children, second.Children); diff != "" {
		t.Errorf("the kept values rendered other children (-first +second):\n%s", diff)
	}
	other, err := set.RenderWith(webhook("b"), reader)
	if err != nil {
		t.Fatal(err)
	}
	for k := range other.Generated {
		if _, ok := first.Generated[k]; ok {
			t.Errorf("parents a and b share the generated value %s", k)
		}
	}
}

// Text given to tpl that calls a generating function, in a chart whose
// own templates call none (so no seed is read for it), fails the render
// at the tpl call: a certificate made afresh on every render would be
// rewritten on every reconcile.
func TestChartGeneratingFunctionInTplNeedsASeed(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"loom.yaml":               "parent:\n  apiVersion: example.loom.dev/v1alpha1\n  kind: Database\nchart: chart\n",
		"chart/Chart.yaml":        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ tpl (.Values.text | default \"plain\") . | quote }}\n",
	})
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := database("a")
	if _, err := set.Render(p); err != nil {
		t.Fatalf("plain text: %v", err)
	}
	p.Object["spec"] = map[string]any{"text": `{{ (genCA "x" 3).Cert }}`}
	first, err1 := set.Render(p)
	_, err2 := set.Render(p)
	if err1 == nil || err2 == nil || !strings.Contains(err1.Error(), "chart/templates/cm.yaml:6") || !strings.Contains(err1.Error(), "needs the render's seed") {
		t.Errorf("genCA through tpl: err %v, %v (children %d), want a failure at chart/templates/cm.yaml:6", err1, err2, len(first))
	}
}
