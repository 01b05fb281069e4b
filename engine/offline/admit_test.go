package offline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/internal/admitcases"
)

// widgetAdmission admits the shared admission table's Widget
// (internal/admitcases), a CRD built by hand, so that this test needs no
// schema compiler.
func widgetAdmission(t *testing.T) *Admission {
	t.Helper()
	crds, err := admitcases.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	a, err := crd.NewAdmitter(crds["Widget"])
	if err != nil {
		t.Fatal(err)
	}
	return &Admission{admitter: a}
}

func TestAdmissionAdmit(t *testing.T) {
	tests := []struct {
		name      string
		admission *Admission
		parents   string
		want      string // the parents after Admit, "---"-separated
		warnings  []string
		err       string
	}{{
		name:      "defaulted and pruned, metadata and status as given",
		admission: widgetAdmission(t),
		parents: `apiVersion: admit.test.loom.dev/v1
kind: Widget
metadata: {name: web, labels: {team: a}, uid: uid-1}
spec: {image: nginx, replcas: 2, database: {name: db}}
status: {state: Ready, extra: kept}
`,
		want: `apiVersion: admit.test.loom.dev/v1
kind: Widget
metadata: {name: web, labels: {team: a}, uid: uid-1}
spec:
  image: nginx
  replicas: 1
  minReplicas: 0
  tier: frontend
  enabled: true
  region: eu
  database: {name: db, size: 1Gi, backup: {enabled: false, schedule: '@daily'}}
status: {state: Ready, extra: kept}
`,
		warnings: []string{`parents.yaml: Widget web: unknown field "spec.replcas"`,
			`parents.yaml: Widget web: unknown field "status.extra"`}, // as kubectl warns
	}, {
		name:      "refused with the API server's message, naming the file",
		admission: widgetAdmission(t),
		parents:   "apiVersion: admit.test.loom.dev/v1\nkind: Widget\nmetadata: {name: web}\nspec: {image: nginx, memory: 1G}\n",
		err:       `parents.yaml: Widget.admit.test.loom.dev "web" is invalid: spec.memory: Invalid value: "1G": spec.memory in body should match '^[0-9]+[MG]i$'`,
	}, {
		name:      "a parent read from the cluster keeps what the API server set",
		admission: widgetAdmission(t),
		parents: `apiVersion: admit.test.loom.dev/v1
kind: Widget
metadata:
  name: web
  namespace: shop
  uid: 0b9c5d4e-7f7e-4a55-9d0a-3c1f1b2a4e01
  resourceVersion: "4711"
  generation: 2
  creationTimestamp: "2026-01-02T03:04:05Z"
  managedFields:
  - {apiVersion: admit.test.loom.dev/v1, fieldsType: FieldsV1, fieldsV1: {f:spec: {f:image: {}}}, manager: kubectl, operation: Apply, time: "2026-01-02T03:04:05Z"}
spec: {image: nginx, replicas: 2, minReplicas: 0, tier: frontend, enabled: true, region: eu}
status: {state: Ready}
`,
		want: `apiVersion: admit.test.loom.dev/v1
kind: Widget
metadata:
  name: web
  namespace: shop
  uid: 0b9c5d4e-7f7e-4a55-9d0a-3c1f1b2a4e01
  resourceVersion: "4711"
  generation: 2
  creationTimestamp: "2026-01-02T03:04:05Z"
  managedFields:
  - {apiVersion: admit.test.loom.dev/v1, fieldsType: FieldsV1, fieldsV1: {f:spec: {f:image: {}}}, manager: kubectl, operation: Apply, time: "2026-01-02T03:04:05Z"}
spec: {image: nginx, replicas: 2, minReplicas: 0, tier: frontend, enabled: true, region: eu}
status: {state: Ready}
`,
	}, {
		name:      "another kind is left for the render to refuse",
		admission: widgetAdmission(t),
		parents:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\nspec: {memory: 1G}\n",
		want:      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\nspec: {memory: 1G}\n",
	}, {
		name:    "a set without a schema leaves parents as they are",
		parents: "apiVersion: admit.test.loom.dev/v1\nkind: Widget\nmetadata: {name: web}\nspec: {memory: 1G, replcas: 2}\n",
		want:    "apiVersion: admit.test.loom.dev/v1\nkind: Widget\nmetadata: {name: web}\nspec: {memory: 1G, replcas: 2}\n",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := admitcases.Decode(tc.parents)
			if err != nil {
				t.Fatal(err)
			}
			parents := []*unstructured.Unstructured{{Object: obj}}
			warnings, err := tc.admission.Admit("parents.yaml", parents)
			if diff := cmp.Diff(tc.warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Admit error = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			want, err := admitcases.Decode(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, parents[0].Object); diff != "" {
				t.Errorf("parent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewAdmissionWithoutSchema(t *testing.T) {
	set := writeSet(t, map[string]string{
		config.File: "parent:\n  apiVersion: example.com/v1\n  kind: App\n",
		"cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
	})
	ad, err := NewAdmission(set)
	if err != nil || ad != nil {
		t.Fatalf("NewAdmission = %v, %v; want nil, nil for a set without a schema", ad, err)
	}
}

// requireGenerate fails a test whose set's schema does not compile.
func requireGenerate(t *testing.T, c config.Config) {
	t.Helper()
	if _, err := crd.Generate(c); err != nil {
		t.Fatal(err)
	}
}
