package pack

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// obj decodes an inline YAML fixture into an unstructured object's map.
func obj(t testing.TB, y string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func uobj(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	return &unstructured.Unstructured{Object: obj(t, y)}
}

// withEntry returns a copy of o whose managedFields hold one Apply entry
// of manager with the given fieldsV1 (YAML), plus another manager's entry.
func withEntry(t testing.TB, o *unstructured.Unstructured, manager, fieldsV1 string) *unstructured.Unstructured {
	t.Helper()
	out := o.DeepCopy()
	entries := []any{map[string]any{
		"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
		"fieldsType": "FieldsV1", "fieldsV1": obj(t, `{f:status: {f:replicas: {}}}`), "subresource": "status",
	}}
	if fieldsV1 != "" {
		entries = append(entries, map[string]any{
			"manager": manager, "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-01-01T00:00:00Z",
			"fieldsType": "FieldsV1", "fieldsV1": obj(t, fieldsV1),
		})
	}
	md := out.Object["metadata"].(map[string]any)
	md["managedFields"] = entries
	return out
}

// deployment is a Deployment as a template renders it.
const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  labels: {app: web}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: app
        image: nginx
`

// loomFields is the managedFields entry Loom's apply of deployment leaves.
const loomFields = `{f:metadata: {f:annotations: {f:loom.dev/applied: {}}, f:labels: {f:app: {}}},
  f:spec: {f:replicas: {}, f:template: {f:spec: {f:containers: {'k:{"name":"app"}': {.: {}, f:image: {}, f:name: {}}}}}}}`

func ptr[T any](v T) *T { return &v }
