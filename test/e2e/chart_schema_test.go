//go:build e2e

package e2e

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

// strictChartFiles is a set over a chart whose values.schema.json forbids
// other keys (additionalProperties: false), at the top and in image.
var strictChartFiles = map[string]string{
	"loom.yaml": `parent:
  apiVersion: charts.e2e.loom.dev/v1
  kind: StrictApp
chart: chart
`,
	"chart/Chart.yaml":  "apiVersion: v2\nname: strict\nversion: 0.1.0\n",
	"chart/values.yaml": "replicaCount: 1\nimage:\n  repository: nginx\n",
	"chart/values.schema.json": `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "replicaCount": {"type": "integer"},
    "image": {"type": "object", "additionalProperties": false, "properties": {"repository": {"type": "string"}}}
  }
}
`,
	"chart/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  replicas: {{ .Values.replicaCount | quote }}
`,
}

// A key that values.schema.json's additionalProperties: false forbids is
// kept by the API server (the generated CRD cannot forbid it) and fails
// the render with Helm's message, as `helm install` fails; it is not
// pruned away, and the chart does not render with its defaults.
func TestChartAdditionalPropertiesFalse(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	gvr := schema.GroupVersionResource{Group: "charts.e2e.loom.dev", Version: "v1", Resource: "strictapps"}
	newChartSet(t, "strict", strictChartFiles, gvr).startProcess(t, ns)
	createObject(t, gvr, ns, "apiVersion: charts.e2e.loom.dev/v1\nkind: StrictApp\nmetadata:\n  name: good\nspec:\n  replicaCount: 2\n")
	createObject(t, gvr, ns, "apiVersion: charts.e2e.loom.dev/v1\nkind: StrictApp\nmetadata:\n  name: typo\nspec:\n  replicaCont: 2\n  image: {repository: nginx, tag: latest}\n")
	waitConditionGVR(t, gvr, ns, "good", "Ready", "True")
	p, err := e.Get(context.Background(), gvr, ns, "typo")
	if err != nil {
		t.Fatal(err)
	}
	if spec, _ := p.Object["spec"].(map[string]any); spec["replicaCont"] == nil {
		t.Fatalf("the API server pruned replicaCont: spec %v", spec)
	}
	waitDegraded(t, gvr, ns, "typo", "RenderFailed", "additional properties 'replicaCont' not allowed", "additional properties 'tag' not allowed")
	if _, err := e.Get(context.Background(), configMapGVR, ns, "typo"); err == nil {
		t.Error("the chart rendered a child for values Helm refuses")
	}
}
