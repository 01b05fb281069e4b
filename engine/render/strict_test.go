package render

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-operator/loom/engine/crd"
	"helm.sh/helm/v4/pkg/chart/common"
	cutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const strictChartSet = "testdata/chartsets/strict"

// TestAdditionalPropertiesFalseFailsAsHelm admits a parent with keys the
// chart's values.schema.json forbids (additionalProperties: false, at the
// top and in a nested object) through the set's generated CRD, as the API
// server and loom render do, and renders it: the keys must not be pruned
// away with a warning, and the render must fail with Helm's own schema
// error, as `helm install` does with the same values.
func TestAdditionalPropertiesFalseFailsAsHelm(t *testing.T) {
	set, err := Load(strictChartSet)
	if err != nil {
		t.Fatal(err)
	}
	def, err := set.CRD()
	if err != nil {
		t.Fatal(err)
	}
	ad, err := crd.NewAdmitter(def)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, values string
		// wantHelm is what Helm's error says.
		wantHelm string
	}{
		{name: "top", values: "replicaCont: 3", wantHelm: "replicaCont"},
		{name: "nested", values: "image: {repository: nginx, tag: latest}", wantHelm: "tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(tt.values), &spec); err != nil {
				t.Fatal(err)
			}
			_, herr := helmRenderSet(t, spec)
			if herr == nil || !strings.Contains(herr.Error(), tt.wantHelm) {
				t.Fatalf("helm: err = %v, want one naming %s", herr, tt.wantHelm)
			}
			parent := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.loom.dev/v1alpha1", "kind": "Strict",
				"metadata": map[string]any{"name": "s", "namespace": "team-a", "uid": "u-s"},
				"spec":     jsonRoundTrip(t, spec),
			}}
			admitted, warnings, err := ad.AdmitWithWarnings(parent.Object)
			if err != nil {
				t.Fatalf("admit: %v", err)
			}
			if len(warnings) > 0 {
				t.Errorf("admit pruned with warnings %v; Helm fails on these values", warnings)
			}
			_, err = set.RenderWith(&unstructured.Unstructured{Object: admitted}, nil)
			if err == nil {
				t.Fatalf("render succeeded; helm fails with %v", herr)
			}
			if !strings.Contains(err.Error(), "additional properties") || !strings.Contains(err.Error(), tt.wantHelm) {
				t.Errorf("render: %v\nwant Helm's schema error: %v", err, herr)
			}
		})
	}
}

// helmRenderSet renders the strict chart as `helm install` does: Helm's
// SDK, with values.schema.json checked.
func helmRenderSet(t *testing.T, values map[string]any) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(filepath.Join(strictChartSet, "chart"))
	if err != nil {
		t.Fatal(err)
	}
	if err := chartutil.ProcessDependencies(ch, values); err != nil {
		return nil, err
	}
	top, err := cutil.ToRenderValuesWithSchemaValidation(ch, values, common.ReleaseOptions{Name: "s", Namespace: "team-a", Revision: 1, IsInstall: true}, nil, false)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, top)
}
