package render

import (
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testHookChart is a chart whose `helm test` Pods call randAlphaNum (as
// podinfo's do), beside a pre-delete Job, a Deployment, and a ConfigMap
// whose hook annotation is not always there.
var testHookChart = map[string]string{
	"loom.yaml":         testConfig + "chart: chart\n",
	"chart/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
	"chart/values.yaml": "tests: {enabled: true}\nhooked: false\n",
	"chart/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: x, image: x}]}
`,
	"chart/templates/tests/grpc.yaml": `{{- if .Values.tests.enabled }}
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-grpc-test-{{ randAlphaNum 5 | lower }}
  annotations:
    "helm.sh/hook": test-success
    sidecar.istio.io/inject: "false"
spec:
  containers: [{name: grpc, image: x}]
  restartPolicy: Never
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-jwt-test
  annotations:
    helm.sh/hook: Test
spec:
  containers: [{name: jwt, image: x}]
{{- end }}
`,
	"chart/templates/goodbye.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-goodbye
  annotations:
    helm.sh/hook: pre-delete
spec:
  template:
    spec: {containers: [{name: x, image: x}], restartPolicy: Never}
`,
	"chart/templates/maybe.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}
  annotations:
    {{- if .Values.hooked }}
    helm.sh/hook: test
    {{- end }}
`,
}

// The texts whose kinds `loom rbac` grants are those of the objects Loom
// may apply: a file whose every document is a hook Loom never applies
// (test, pre-delete, with its literal annotation) is left out, and so are
// its random calls; a file whose hook annotation is conditional is kept.
func TestChildTextsLeaveOutHooksNeverApplied(t *testing.T) {
	set := loadSet(t, testHookChart)
	var got []string
	for name := range set.ChildTexts() {
		got = append(got, name)
	}
	sort.Strings(got)
	want := []string{"chart/templates/deployment.yaml", "chart/templates/maybe.yaml"} // by their path in the set
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ChildTexts (-want +got):\n%s", diff)
	}
	if set.Seeded() {
		t.Error("Seeded: only a test hook calls randAlphaNum, and Loom never renders it")
	}
	// Without a seed, the render works: the test hooks are not executed.
	out, err := set.RenderWith(fixture(t, "apiVersion: example.com/v1\nkind: App\nmetadata: {name: shop, namespace: team-a, uid: u1, generation: 1}\nspec: {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range out.Children {
		kinds = append(kinds, c.GetKind())
	}
	slices.Sort(kinds)
	if diff := cmp.Diff([]string{"Deployment", "ServiceAccount"}, kinds); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
}
