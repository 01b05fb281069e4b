package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/apply"
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

// The informers' transforms pack what the cache keeps, drop what Loom
// never reads, and are idempotent: a watch-list relist hands the store
// objects that were transformed already.
func TestCacheTransforms(t *testing.T) {
	w := &childWatcher{manager: "loom"}
	tests := []struct {
		name      string
		transform func(any) (any, error)
		check     func(t *testing.T, in, out *unstructured.Unstructured)
	}{
		{"child: slimmed, with the fingerprint of Loom's entry", w.slim, func(t *testing.T, in, out *unstructured.Unstructured) {
			if got, want := apply.Fingerprint(out, "loom"), apply.Fingerprint(in, "loom"); got != want || got == "" {
				t.Errorf("fingerprint %q, want %q", got, want)
			}
			if _, ok := out.GetAnnotations()["team"]; ok {
				t.Error("kept an annotation that is not Loom's")
			}
			if _, ok := out.Object["spec"].(map[string]any)["template"]; ok {
				t.Error("kept spec.template, which Loom knows from its templates")
			}
		}},
		{"parent: everything but managedFields and kubectl's copy", stripManagedFields, func(t *testing.T, in, out *unstructured.Unstructured) {
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
			got, err := tt.transform(in.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			p, ok := got.(*apply.Packed)
			if !ok {
				t.Fatalf("cached a %T, want *apply.Packed", got)
			}
			again, err := tt.transform(p)
			if err != nil || again != any(p) {
				t.Errorf("transforming the cached object again gave %T %p, %v; want it unchanged", again, again, err)
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
