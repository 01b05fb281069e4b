//go:build e2e

package e2e

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

// specTextChartFiles is a set over a chart that passes its annotations
// value to tpl (as Bitnami's common.tplvalues.render does), and declares
// Secrets as a kind its templates may look up.
var specTextChartFiles = map[string]string{
	"loom.yaml": `parent:
  apiVersion: charts.e2e.loom.dev/v1
  kind: NoteApp
chart: chart
lookups:
  - {apiVersion: v1, kind: Secret}
`,
	"chart/Chart.yaml":  "apiVersion: v2\nname: noteapp\nversion: 0.1.0\n",
	"chart/values.yaml": "note: hello\n",
	"chart/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-note
data:
  note: {{ tpl .Values.note . | quote }}
`,
}

// Template text a parent's author writes cannot look up what the set may
// read: the parent whose note looks up a Secret is Degraded, naming
// specLookups, and gets no child; another parent of the set is Ready.
func TestChartSpecTextCannotLookUp(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	gvr := schema.GroupVersionResource{Group: "charts.e2e.loom.dev", Version: "v1", Resource: "noteapps"}
	set := newChartSet(t, "noteapp", specTextChartFiles, gvr)
	createObject(t, secretGVR, ns, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2\n")
	set.startProcess(t, ns)
	createObject(t, gvr, ns, "apiVersion: charts.e2e.loom.dev/v1\nkind: NoteApp\nmetadata:\n  name: plain\nspec:\n  note: '{{ .Release.Name }} says hi'\n")
	createObject(t, gvr, ns, "apiVersion: charts.e2e.loom.dev/v1\nkind: NoteApp\nmetadata:\n  name: steal\nspec:\n  note: '{{ (lookup \"v1\" \"Secret\" .Release.Namespace \"db\").data | toJson }}'\n")
	waitConditionGVR(t, gvr, ns, "plain", "Ready", "True")
	waitDegraded(t, gvr, ns, "steal", "RenderFailed", "lookup refused", "specLookups")
	if _, err := e.Get(context.Background(), configMapGVR, ns, "steal-note"); err == nil {
		t.Error("the parent whose text looks up a Secret got a child")
	}
}
