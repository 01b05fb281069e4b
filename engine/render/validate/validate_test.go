package validate

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/engine/render/yamldoc"
)

// TestObject checks Object on one decoded object at a time: "" means
// the object is valid, anything else is the exact error.
func TestObject(t *testing.T) {
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx
`
	tests := []struct {
		name string
		obj  string
		want string
	}{
		{"valid ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web.config-1\ndata:\n  a: b\n", ""},
		{"valid Deployment", deployment, ""},
		{"valid Service", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n    targetPort: http\n", ""},
		{"custom kind with any fields", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  anything: [1, {b: c}]\n  replicas: \"3\"\nextra: true\n", ""},
		{"built-in version the scheme lacks is not checked", "apiVersion: apps/v9\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  bogus: 1\n", ""},
		{"missing apiVersion", "kind: ConfigMap\nmetadata:\n  name: web\n", "apiVersion: required"},
		{"apiVersion not a string", "apiVersion: 1\nkind: ConfigMap\nmetadata:\n  name: web\n", "apiVersion: required"},
		{"invalid apiVersion", "apiVersion: a/b/c\nkind: ConfigMap\nmetadata:\n  name: web\n", "apiVersion: unexpected GroupVersion string: a/b/c"},
		{"missing kind", "apiVersion: v1\nmetadata:\n  name: web\n", "kind: required"},
		{"missing metadata", "apiVersion: v1\nkind: ConfigMap\n", "metadata: required"},
		{"missing name", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n", "metadata.name: required (generateName is not supported: Loom must know each child's name)"},
		{"generateName", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: web-\n", "metadata.name: required (generateName is not supported: Loom must know each child's name)"},
		{"uppercase name", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Web\n", `metadata.name: invalid name "Web": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"Service name starting with a digit", "apiVersion: v1\nkind: Service\nmetadata:\n  name: 1web\n", `metadata.name: invalid name "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`},
		{"Service name with a dot", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web.a\n", `metadata.name: invalid name "web.a": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`},
		{"misspelt field", replaceOnce(deployment, "containers:", "contianers:"), `not a valid Deployment: unknown field "spec.template.spec.contianers"`},
		{"two unknown fields", replaceOnce(deployment, "spec:\n  selector", "spec:\n  foo: 1\n  bar: 2\n  selector"), `not a valid Deployment: unknown field "spec.bar"; unknown field "spec.foo"`},
		{"replicas as a string", replaceOnce(deployment, "spec:\n  selector", "spec:\n  replicas: \"3\"\n  selector"), "spec.replicas: must be int32, not string"},
		{"replicas as a float", replaceOnce(deployment, "spec:\n  selector", "spec:\n  replicas: 1.5\n  selector"), "spec.replicas: must be int32, not number 1.5"},
		{"ConfigMap data value a bool", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  enabled: true\n", "data: must be string, not bool"},
		{"ConfigMap data value a number", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  port: 80\n", "data: must be string, not number"},
		{"port as a string", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: \"80\"\n", "spec.ports.port: must be int32, not string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := yamldoc.Decode([]byte(tt.obj))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			got := ""
			if err := Object(obj); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("validate mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// replaceOnce replaces the first old in s, and panics when there is none,
// so that a fixture edit cannot silently do nothing.
func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	panic("replaceOnce: " + old + " not found")
}
