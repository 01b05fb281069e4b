//go:build e2e

package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

// A template that loops for ever holds one worker only until its render's
// deadline (half the reconcile timeout): with a single worker, another
// parent still converges, and the looping parent says which line of which
// file did not finish. On the old code the render had no deadline: the
// only worker rendered the looping parent until Loom was killed, and the
// other parent never became Ready.
func TestLoopingTemplateDoesNotBlockOtherParents(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "app"), map[string]string{
		"loom.yaml": env.Fixture(t, "sets/myresource/loom.yaml"),
		"configmap.yaml": env.Fixture(t, "sets/myresource/configmap.yaml") +
			"{{- if eq .Spec.image \"loop\" }}{{ range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}{{ end }}\n",
	})
	startLoom(t, dir, ns, loomOptions{workers: 1, reconcileTimeout: 4 * time.Second})
	createParent(t, ns, "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: looping\nspec:\n  image: loop\n")
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	waitDegraded(t, myresGVR, ns, "looping", "RenderFailed",
		"configmap.yaml:7: the render did not finish in time (a loop that never ends?): it ran for 2s, half the reconcile timeout (loom run --reconcile-timeout)")
}

// A chart set's template that loops for ever holds one worker only until
// the render's deadline too: with a single worker, another parent of the
// set still converges, and the looping parent names the loop by its
// file's path in the set and its line. On the old code a chart's render
// had no deadline: the only worker rendered the looping parent until Loom
// was killed, and the other parent never became Ready.
func TestLoopingChartDoesNotBlockOtherParents(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	gvr := schema.GroupVersionResource{Group: "deadline.e2e.loom.dev", Version: "v1", Resource: "loopapps"}
	set := newChartSet(t, "loopapp", map[string]string{
		"loom.yaml":         "parent:\n  apiVersion: deadline.e2e.loom.dev/v1\n  kind: LoopApp\nchart: chart\n",
		"chart/Chart.yaml":  "apiVersion: v2\nname: loopapp\nversion: 0.1.0\n",
		"chart/values.yaml": "loop: false\n",
		"chart/templates/_helpers.tpl": "{{- define \"loopapp.loop\" }}\n" +
			"{{- range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}\n{{- end }}\n",
		"chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n" +
			"  loop: {{ .Values.loop | quote }}\n{{- if .Values.loop }}{{ include \"loopapp.loop\" . }}{{ end }}\n",
	}, gvr)
	set.start(t, ns, loomOptions{workers: 1, reconcileTimeout: 4 * time.Second})
	createObject(t, gvr, ns, "apiVersion: deadline.e2e.loom.dev/v1\nkind: LoopApp\nmetadata:\n  name: looping\nspec:\n  loop: true\n")
	createObject(t, gvr, ns, "apiVersion: deadline.e2e.loom.dev/v1\nkind: LoopApp\nmetadata:\n  name: good\nspec: {}\n")
	waitConditionGVR(t, gvr, ns, "good", "Ready", "True")
	waitDegraded(t, gvr, ns, "looping", "RenderFailed",
		"chart/templates/_helpers.tpl:2: the render did not finish in time (a loop that never ends?): it ran for 2s, half the reconcile timeout (loom run --reconcile-timeout)")
}
