package apply

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return normalize(m).(map[string]any)
}

// normalize turns sigs.k8s.io/yaml's float64 numbers into the int64 that
// unstructured objects from the API server hold.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normalize(x)
		}
	case []any:
		for i, x := range t {
			t[i] = normalize(x)
		}
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	}
	return v
}

const desiredDeployment = `
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: app
        image: nginx
        resources: {requests: {memory: 1024Mi}}
        ports: [{name: http, containerPort: 8080}]
`

func TestMatches(t *testing.T) {
	tests := []struct {
		name string
		live string
		want bool
	}{
		{"identical", desiredDeployment, true},
		{"server defaults and extra fields", `
metadata:
  name: web
  uid: abc
  labels: {app: web, extra: x}
  annotations: {deployment.kubernetes.io/revision: "1"}
spec:
  replicas: 2
  strategy: {type: RollingUpdate}
  template:
    spec:
      restartPolicy: Always
      containers:
      - name: app
        image: nginx
        imagePullPolicy: IfNotPresent
        resources: {requests: {memory: 1024Mi}}
        ports: [{name: http, containerPort: 8080, protocol: TCP}]
status: {replicas: 2}
`, true},
		{"normalised quantity", `
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: app
        image: nginx
        resources: {requests: {memory: 1Gi}}
        ports: [{name: http, containerPort: 8080}]
`, true},
		{"injected sidecar is not drift", `
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: istio-proxy
        image: proxy
      - name: app
        image: nginx
        resources: {requests: {memory: 1024Mi}}
        ports: [{name: http, containerPort: 8080}]
`, true},
		{"replicas changed by another writer", `
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 7
  template:
    spec:
      containers:
      - name: app
        image: nginx
        resources: {requests: {memory: 1024Mi}}
        ports: [{name: http, containerPort: 8080}]
`, false},
		{"label changed", `
metadata: {name: web, labels: {app: other}}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - {name: app, image: nginx, resources: {requests: {memory: 1024Mi}}, ports: [{name: http, containerPort: 8080}]}
`, false},
		{"container missing", `
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - {name: other, image: nginx}
`, false},
		{"different quantity", `
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - {name: app, image: nginx, resources: {requests: {memory: 2Gi}}, ports: [{name: http, containerPort: 8080}]}
`, false},
	}
	desired := obj(t, desiredDeployment)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Matches(desired, obj(t, tt.live)); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMatchesEmptyValuesTheServerDrops(t *testing.T) {
	desired := obj(t, `{metadata: {name: x, annotations: {}}, data: {}, spec: {list: []}}`)
	live := obj(t, `{metadata: {name: x}}`)
	if !Matches(desired, live) {
		t.Error("empty map and list dropped by the server should match")
	}
	if Matches(obj(t, `{data: {a: "1"}}`), live) {
		t.Error("a non-empty map missing from live must not match")
	}
}

func TestProject(t *testing.T) {
	desired := obj(t, `
spec:
  replicas: 2
  containers:
  - {name: app, image: nginx}
  ports: [80, 443]
`)
	live := obj(t, `
spec:
  replicas: 3
  paused: false
  containers:
  - {name: sidecar, image: proxy}
  - {name: app, image: nginx, imagePullPolicy: Always}
  ports: [80, 443]
status: {ready: true}
`)
	want := obj(t, `
spec:
  replicas: 3
  containers:
  - {name: app, image: nginx}
  ports: [80, 443]
`)
	if diff := cmp.Diff(want, Project(desired, live)); diff != "" {
		t.Errorf("Project (-want +got):\n%s", diff)
	}
}

func TestHashIsStableAndSensitive(t *testing.T) {
	a := &unstructured.Unstructured{Object: obj(t, desiredDeployment)}
	b := &unstructured.Unstructured{Object: obj(t, desiredDeployment)}
	ha, err := Hash(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := Hash(b)
	if ha != hb || len(ha) != 16 {
		t.Fatalf("hashes of equal objects: %q, %q", ha, hb)
	}
	b.Object["spec"].(map[string]any)["replicas"] = int64(3)
	if hc, _ := Hash(b); hc == ha {
		t.Fatal("hash did not change with the object")
	}
	if got := withHash(a, ha).GetAnnotations()[AnnotationApplied]; got != ha {
		t.Fatalf("annotation = %q", got)
	}
	if a.GetAnnotations() != nil {
		t.Fatal("withHash mutated its input")
	}
}

func TestIsOwnWrite(t *testing.T) {
	a := New(nil, nil, "")
	ref := Ref{Name: "web"}
	if a.IsOwnWrite(ref, "5") {
		t.Fatal("nothing applied yet, but IsOwnWrite is true")
	}
	a.remember(ref, record{hash: "h", rv: 5})
	if !a.IsOwnWrite(ref, "5") {
		t.Error("the echo of our own write is not recognised")
	}
	if a.IsOwnWrite(ref, "6") {
		t.Error("a later write by someone else is taken for our own")
	}
	a.Forget(ref)
	if a.IsOwnWrite(ref, "5") {
		t.Error("Forget kept the record")
	}
}

func TestMismatchNamesThePath(t *testing.T) {
	desired := obj(t, desiredDeployment)
	tests := []struct {
		name, live, want string
	}{
		{"match", desiredDeployment, ""},
		{"scalar", strings.Replace(desiredDeployment, "replicas: 2", "replicas: 7", 1), "spec.replicas"},
		{"missing map key", strings.Replace(desiredDeployment, "labels: {app: web}", "", 1), "metadata.labels"},
		{"named list item field", strings.Replace(desiredDeployment, "image: nginx", "image: evil", 1),
			"spec.template.spec.containers[name=app].image"},
		{"missing named item", strings.Replace(desiredDeployment, "name: app", "name: sidecar", 1),
			"spec.template.spec.containers[name=app]"},
		{"named item in a nested list", strings.Replace(desiredDeployment, "containerPort: 8080", "containerPort: 80", 1),
			"spec.template.spec.containers[name=app].ports[name=http].containerPort"},
		{"quantity in another form", strings.Replace(desiredDeployment, "1024Mi", "1Gi", 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, ok := Mismatch(desired, obj(t, tt.live))
			if ok != (tt.want == "") || path != tt.want {
				t.Errorf("Mismatch = %q, %v; want %q", path, ok, tt.want)
			}
			if ok != Matches(desired, obj(t, tt.live)) {
				t.Errorf("Mismatch and Matches disagree")
			}
		})
	}
	if path, ok := Mismatch(obj(t, `{a: [1, 2]}`), obj(t, `{a: [1, 3]}`)); ok || path != "a[1]" {
		t.Errorf("positional: Mismatch = %q, %v; want a[1]", path, ok)
	}
}

func TestDrift(t *testing.T) {
	desired := &unstructured.Unstructured{Object: obj(t, desiredDeployment)}
	tests := []struct {
		name, before, after, want string
	}{
		{"reverted scale", `{metadata: {name: web, labels: {app: web}}, spec: {replicas: 7}}`,
			`{metadata: {name: web, labels: {app: web}}, spec: {replicas: 2}}`, "spec.replicas"},
		{"removed label", `{metadata: {name: web}, spec: {replicas: 2}}`,
			`{metadata: {name: web, labels: {app: web}}, spec: {replicas: 2}}`, "metadata.labels"},
		// The apply changed nothing Loom sets: a normalisation Matches does
		// not know of made it write, which is not another writer's change.
		{"restated", `{metadata: {name: web, labels: {app: web}}, spec: {replicas: 2}}`,
			`{metadata: {name: web, labels: {app: web}}, spec: {replicas: 2}}`, ""},
		{"fields Loom does not set", `{metadata: {name: web, labels: {app: web, x: y}}, spec: {replicas: 2, paused: true}}`,
			`{metadata: {name: web, labels: {app: web}}, spec: {replicas: 2}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := &unstructured.Unstructured{Object: obj(t, tt.before)}
			after := &unstructured.Unstructured{Object: obj(t, tt.after)}
			if got := drift(desired, before, after); got != tt.want {
				t.Errorf("drift = %q, want %q", got, tt.want)
			}
		})
	}
}
