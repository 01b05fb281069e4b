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

// neverAppliedFile leaves a file out only when its text shows that every
// document is a hook Loom never applies.
func TestNeverAppliedFile(t *testing.T) {
	const pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n"
	tests := []struct {
		name, text string
		want       bool
	}{
		{"test hook", pod + "    helm.sh/hook: test\n", true},
		{"quoted key and value", pod + "    \"helm.sh/hook\": \"test-success\"\n", true},
		{"single-quoted value", pod + "    helm.sh/hook: 'pre-delete'\n", true},
		{"pre-delete and post-delete", pod + "    helm.sh/hook: pre-delete,post-delete\n", true},
		{"unknown type: Helm skips it", pod + "    helm.sh/hook: pre-install,crd-install\n", true},
		{"whole file in an if", "{{- if .Values.t }}\n" + pod + "    helm.sh/hook: test\n{{- end }}\n", true},
		{"two test documents", pod + "    helm.sh/hook: test\n---\n" + pod + "    helm.sh/hook: test\n", true},
		{"pre-install", pod + "    helm.sh/hook: pre-install\n", false},
		{"test and an ordinary document", pod + "    helm.sh/hook: test\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", false},
		{"annotation in an if", pod + "    {{- if .Values.t }}\n    helm.sh/hook: test\n    {{- end }}\n", false},
		{"annotation in an else", "{{- if .Values.t }}\n" + pod + "    a: b\n{{- else }}\n" + pod + "    helm.sh/hook: test\n{{- end }}\n", false},
		{"computed value", pod + "    helm.sh/hook: {{ .Values.hook }}\n", false},
		{"annotations from a helper", pod + "    {{- include \"hooks\" . | nindent 4 }}\n", false},
		{"not under metadata.annotations", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  helm.sh/hook: test\n", false},
		{"an action across lines", "{{- if\n .Values.t }}\n" + pod + "    helm.sh/hook: test\n{{- end }}\n", false},
		{"no document", "{{/* nothing */}}\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := neverAppliedFile([]byte(tt.text)); got != tt.want {
				t.Errorf("neverAppliedFile = %v, want %v:\n%s", got, tt.want, tt.text)
			}
		})
	}
}
