package packwatch

import (
	"reflect"
	"testing"

	"github.com/loom-operator/loom/engine/pack"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

const cachedYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  uid: u1
  resourceVersion: "7"
  generation: 2
  labels: {app: web}
  annotations:
    loom.dev/applied: abc
    team: blue
    kubectl.kubernetes.io/last-applied-configuration: '{"big": "copy"}'
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true}]
  managedFields:
  - {manager: loom, operation: Apply, apiVersion: apps/v1, fieldsType: FieldsV1, fieldsV1: {f:spec: {f:replicas: {}}}}
  - {manager: kubectl, operation: Update, apiVersion: apps/v1, fieldsType: FieldsV1, fieldsV1: {f:metadata: {f:annotations: {f:team: {}}}}}
spec:
  replicas: 2
  template: {metadata: {labels: {app: web}}}
status: {observedGeneration: 2, readyReplicas: 2}
`

// The informers' decoders pack what the cache keeps and drop what Loom
// never reads, and decode the same JSON to the same object: a watch-list
// relist hands the store objects decoded again from the server's JSON.
func TestCachePacking(t *testing.T) {
	tests := []struct {
		name  string
		pack  PackFunc
		check func(t *testing.T, in, out *unstructured.Unstructured)
	}{
		{"child: slimmed, with the fingerprint of Loom's entry", Child("loom"), func(t *testing.T, in, out *unstructured.Unstructured) {
			if got, want := pack.Fingerprint(out, "loom"), pack.Fingerprint(in, "loom"); got != want || got == "" {
				t.Errorf("fingerprint %q, want %q", got, want)
			}
			if _, ok := out.GetAnnotations()["team"]; ok {
				t.Error("kept an annotation that is not Loom's")
			}
			if _, ok := out.Object["spec"].(map[string]any)["template"]; ok {
				t.Error("kept spec.template, which Loom knows from its templates")
			}
		}},
		{"parent: everything but managedFields and kubectl's copy", Parent, func(t *testing.T, in, out *unstructured.Unstructured) {
			if out.GetAnnotations()["team"] != "blue" || out.GetAnnotations()["loom.dev/applied"] != "abc" {
				t.Errorf("annotations %v, want team and loom.dev/applied kept", out.GetAnnotations())
			}
			if _, ok := out.Object["spec"].(map[string]any)["template"]; !ok {
				t.Error("dropped the parent's spec")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := u(t, cachedYAML)
			data, err := in.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			d := packedDecoder{pack: tt.pack}
			got, _, err := d.Decode(data, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, ok := got.(*pack.Packed)
			if !ok {
				t.Fatalf("cached a %T, want *pack.Packed", got)
			}
			again, _, err := d.Decode(data, nil, nil)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("decoding the same JSON again gave %v, %v; want %v", again, err, got)
			}
			out, err := p.Object()
			if err != nil {
				t.Fatal(err)
			}
			if len(out.GetManagedFields()) != 0 {
				t.Error("kept managedFields")
			}
			if _, ok := out.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; ok {
				t.Error("kept kubectl's last-applied copy")
			}
			if out.GetUID() != "u1" || out.GetResourceVersion() != "7" || out.GetGeneration() != 2 {
				t.Errorf("identity %s rv %s gen %d, want u1 7 2", out.GetUID(), out.GetResourceVersion(), out.GetGeneration())
			}
			tt.check(t, in, out)
		})
	}
}

// u decodes a YAML fixture into an unstructured object.
func u(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(j, &obj); err != nil { // numbers as int64, like the API server's
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}
