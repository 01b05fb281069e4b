package rbac

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/loom-operator/loom/engine/render"
)

// `loom rbac` grants only what the objects Loom applies need: a chart's
// `helm test` Pods, which call randAlphaNum in their names as podinfo's
// do, give Loom neither pods nor the seed Secret.
func TestFromSetChartTestHooksGrantNothing(t *testing.T) {
	fsys := fstest.MapFS{
		"loom.yaml":         {Data: []byte("parent: {apiVersion: example.com/v1, kind: App}\nchart: chart\n")},
		"chart/Chart.yaml":  {Data: []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n")},
		"chart/values.yaml": {Data: []byte("tests: {enabled: true}\n")},
		"chart/templates/service.yaml": {Data: []byte(`apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec: {ports: [{port: 80}]}
`)},
		"chart/templates/tests/jwt.yaml": {Data: []byte(`{{- if .Values.tests.enabled }}
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-jwt-test-{{ randAlphaNum 5 | lower }}
  annotations:
    "helm.sh/hook": test-success
spec:
  containers: [{name: curl, image: curl}]
  restartPolicy: Never
{{- end }}
`)},
	}
	set, err := render.LoadFS(fsys, "app")
	if err != nil {
		t.Fatal(err)
	}
	s, err := FromSet(set)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lines(Generate([]Set{s}, Options{})), "\n")
	for _, res := range []string{"pods", "secrets"} {
		if strings.Contains(got, res) {
			t.Errorf("the policy grants %s, which only the test hook needs:\n%s", res, got)
		}
	}
	if !strings.Contains(got, "services") {
		t.Errorf("the policy lacks services:\n%s", got)
	}
}
