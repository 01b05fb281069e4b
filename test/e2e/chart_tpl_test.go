//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

// tplLookupChartFiles is a set over a chart whose values.yaml text, run
// by tpl, looks up a ConfigMap; the text says "blockstore", so Loom runs
// it on a clone of the templates (as text that may define a template).
var tplLookupChartFiles = map[string]string{
	"loom.yaml": `parent:
  apiVersion: charts.e2e.loom.dev/v1
  kind: TplApp
chart: chart
lookups:
  - {apiVersion: v1, kind: ConfigMap}
`,
	"chart/Chart.yaml": "apiVersion: v2\nname: tplapp\nversion: 0.1.0\n",
	"chart/values.yaml": `banner: 'blockstore {{ (lookup "v1" "ConfigMap" .Release.Namespace "settings").data | default dict | dig "color" "none" }}'
`,
	"chart/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-banner
data:
  banner: {{ tpl .Values.banner . | quote }}
`,
}

// A lookup in tpl text keeps being watched: the child follows the object
// it looked up when that object appears and changes, for an unchanged
// parent (whose chart output Loom keeps only when it made no lookup).
func TestChartTplLookupIsWatched(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	gvr := schema.GroupVersionResource{Group: "charts.e2e.loom.dev", Version: "v1", Resource: "tplapps"}
	newChartSet(t, "tplapp", tplLookupChartFiles, gvr).startProcess(t, ns)
	createObject(t, gvr, ns, "apiVersion: charts.e2e.loom.dev/v1\nkind: TplApp\nmetadata:\n  name: a\nspec: {}\n")
	banner := func(want string) func(context.Context) error {
		return func(ctx context.Context) error {
			cm, err := e.Get(ctx, configMapGVR, ns, "a-banner")
			if err != nil {
				return err
			}
			if got, _, _ := unstructured.NestedString(cm.Object, "data", "banner"); got != want {
				return errNotYet
			}
			return nil
		}
	}
	eventually(t, 60*time.Second, "the banner says none", banner("blockstore none"))
	createObject(t, configMapGVR, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n")
	eventually(t, 60*time.Second, "the banner follows the ConfigMap it looked up", banner("blockstore blue"))
	cm, err := e.Get(context.Background(), configMapGVR, ns, "settings")
	if err != nil {
		t.Fatal(err)
	}
	cm.Object["data"] = map[string]any{"color": "green"}
	if _, err := e.Dyn.Resource(configMapGVR).Namespace(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the banner follows the ConfigMap's change", banner("blockstore green"))
}
