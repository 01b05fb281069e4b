package apply

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestReleasePatch checks what releasing a kept child removes, by applying
// the patch to the object as the API server would: only Loom's marks go,
// whatever else is on the object stays.
func TestReleasePatch(t *testing.T) {
	const loomEntry = `{manager: loom, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:a": {}}}}`
	const otherEntry = `{manager: kubectl, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:b": {}}}}`
	tests := []struct {
		name        string
		obj         string
		want        string
		wantChanged bool
	}{
		{
			name: "Loom's child, nothing else on it",
			obj: `{apiVersion: v1, kind: ConfigMap, metadata: {name: data, namespace: ns, uid: c1, resourceVersion: "7",
  labels: {applyset.kubernetes.io/part-of: set1, app.kubernetes.io/managed-by: loom, app: web},
  annotations: {loom.dev/applied: abc, loom.dev/delete-policy: orphan},
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true, blockOwnerDeletion: true},
    {apiVersion: v1, kind: Namespace, name: ns, uid: n1}],
  managedFields: [` + loomEntry + `]}, data: {a: "1"}}`,
			want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: data, namespace: ns, uid: c1, resourceVersion: "7",
  labels: {app: web}, annotations: {loom.dev/delete-policy: orphan}, managedFields: [{}]}, data: {a: "1"}}`,
			wantChanged: true,
		},
		{
			name: "other owners, managers and labels stay",
			obj: `{apiVersion: v1, kind: ConfigMap, metadata: {name: data, namespace: ns, uid: c1, resourceVersion: "7",
  labels: {applyset.kubernetes.io/part-of: set1, app.kubernetes.io/managed-by: loom},
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: a, uid: o1}, {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true}, {apiVersion: v1, kind: ConfigMap, name: b, uid: o2}],
  managedFields: [` + otherEntry + `, ` + loomEntry + `]}, data: {a: "1", b: "2"}}`,
			want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: data, namespace: ns, uid: c1, resourceVersion: "7", labels: {},
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: a, uid: o1}, {apiVersion: v1, kind: ConfigMap, name: b, uid: o2}],
  managedFields: [` + otherEntry + `]}, data: {a: "1", b: "2"}}`,
			wantChanged: true,
		},
		{
			name: "a cluster-scoped child: its loom.dev/owner goes",
			obj: `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: reader, uid: c1, resourceVersion: "7",
  labels: {applyset.kubernetes.io/part-of: set1, app.kubernetes.io/managed-by: loom},
  annotations: {loom.dev/applied: abc, loom.dev/delete-policy: orphan, loom.dev/owner: example.loom.dev/v1alpha1/MyResource/ns/web/p1},
  managedFields: [` + loomEntry + `]}, rules: []}`,
			want: `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: reader, uid: c1, resourceVersion: "7",
  labels: {}, annotations: {loom.dev/delete-policy: orphan}, managedFields: [{}]}, rules: []}`,
			wantChanged: true,
		},
		{
			name: "managed-by someone else is theirs",
			obj: `{apiVersion: v1, kind: ConfigMap, metadata: {name: data, namespace: ns, uid: c1, resourceVersion: "7",
  labels: {app.kubernetes.io/managed-by: helm}}}`,
			want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: data, namespace: ns, uid: c1, resourceVersion: "7",
  labels: {app.kubernetes.io/managed-by: helm}}}`,
		},
		{
			name: "already released",
			obj: `{apiVersion: v1, kind: ConfigMap, metadata: {name: data, namespace: ns, uid: c1, resourceVersion: "8",
  annotations: {loom.dev/delete-policy: orphan}}}`,
			want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: data, namespace: ns, uid: c1, resourceVersion: "8",
  annotations: {loom.dev/delete-policy: orphan}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := fromYAML(t, tt.obj)
			ops, changed := releasePatch(obj, "p1", "loom")
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(fromYAML(t, tt.want).Object, patched(t, obj, ops).Object); diff != "" {
				t.Errorf("released object (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReleasePatchIsConditional checks the patch's preconditions: it fails
// on an object with another UID, and it names the resourceVersion read (the
// API server answers a Conflict when the object has another).
func TestReleasePatchIsConditional(t *testing.T) {
	obj := fromYAML(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: data, uid: c1, resourceVersion: "7", labels: {applyset.kubernetes.io/part-of: s}}}`)
	ops, _ := releasePatch(obj, "p1", "loom")
	want := []jsonOp{
		{Op: "test", Path: "/metadata/uid", Value: "c1"},
		{Op: "replace", Path: "/metadata/resourceVersion", Value: "7"},
	}
	if diff := cmp.Diff(want, ops[:2]); diff != "" {
		t.Errorf("preconditions (-want +got):\n%s", diff)
	}
	other := obj.DeepCopy()
	other.SetUID("c2")
	body, _ := json.Marshal(ops)
	p, err := jsonpatch.DecodePatch(body)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(other.Object)
	if _, err := p.Apply(doc); err == nil {
		t.Error("the patch applied to an object with another UID")
	}
}

func fromYAML(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func patched(t *testing.T, obj *unstructured.Unstructured, ops []jsonOp) *unstructured.Unstructured {
	t.Helper()
	body, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(body)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(obj.Object)
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("apply %s: %v", body, err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(out, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}
