package pack

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/internal/fixture"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

const packedChild = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: team-a
  uid: u1
  resourceVersion: "42"
  generation: 3
  labels: {app: web}
  annotations: {loom.dev/applied: abc}
  ownerReferences:
  - {apiVersion: example.com/v1, kind: Other, name: x, uid: o1}
  - {apiVersion: example.com/v1, kind: MyResource, name: web, uid: p1, controller: true, blockOwnerDeletion: true}
spec:
  replicas: 2
status:
  observedGeneration: 3
  ratio: 0.5
  conditions:
  - {type: Available, status: "True"}
`

// A packed object decodes to exactly what was packed, integers as int64,
// and carries the metadata that keys, indexes and routes it.
func TestPack(t *testing.T) {
	tests := []struct {
		name    string
		obj     string
		wantRef *metav1.OwnerReference
		// allLifted: the JSON keeps none of the fields Packed keeps typed.
		allLifted bool
	}{
		{"child with two owners", packedChild,
			&metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "MyResource", Name: "web", UID: "p1",
				Controller: fixture.Ptr(true), BlockOwnerDeletion: fixture.Ptr(true)}, false},
		{"cluster-scoped, no owner", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, uid: u2, resourceVersion: \"1\"}\n", nil, false},
		{"just the controller, as the API server writes it", `apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: ns
  uid: u3
  resourceVersion: "7"
  ownerReferences: [{apiVersion: example.com/v1, kind: MyResource, name: web, uid: p1, controller: true, blockOwnerDeletion: true}]
data: {a: "1"}
`, &metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "MyResource", Name: "web", UID: "p1", Controller: fixture.Ptr(true), BlockOwnerDeletion: fixture.Ptr(true)}, true},
		{"controller with blockOwnerDeletion false", `apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  ownerReferences: [{apiVersion: example.com/v1, kind: MyResource, name: web, uid: p1, controller: true, blockOwnerDeletion: false}]
`, &metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "MyResource", Name: "web", UID: "p1", Controller: fixture.Ptr(true)}, false},
		{"one owner, not a controller", `apiVersion: v1
kind: ConfigMap
metadata: {name: c, ownerReferences: [{apiVersion: v1, kind: Pod, name: p, uid: p2}]}
`, nil, false},
		{"empty and zero values stay", `apiVersion: v1
kind: ConfigMap
metadata: {name: "", namespace: "", generation: 0}
`, nil, false},
		{"no metadata", "apiVersion: v1\nkind: List\nitems: []\n", nil, false},
		{"only lifted metadata", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns, uid: u4, resourceVersion: \"9\", generation: 2}\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := decoded(t, fixture.Object(t, tt.obj))
			p, err := Pack(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Object()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in.Object, out.Object); diff != "" {
				t.Errorf("Object (-packed +decoded):\n%s", diff)
			}
			m, err := meta.Accessor(p)
			if err != nil {
				t.Fatal(err)
			}
			if m.GetName() != in.GetName() || m.GetNamespace() != in.GetNamespace() || m.GetUID() != in.GetUID() ||
				m.GetResourceVersion() != in.GetResourceVersion() || m.GetGeneration() != in.GetGeneration() {
				t.Errorf("metadata = %s/%s %s rv %s gen %d, want that of the object",
					m.GetNamespace(), m.GetName(), m.GetUID(), m.GetResourceVersion(), m.GetGeneration())
			}
			if diff := cmp.Diff(tt.wantRef, p.Controller()); diff != "" {
				t.Errorf("Controller (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRef, metav1.GetControllerOfNoCopy(m)); diff != "" {
				t.Errorf("controller in ObjectMeta (-want +got):\n%s", diff)
			}
			if len(m.GetOwnerReferences()) > 1 {
				t.Errorf("kept %d owners, want the controller only", len(m.GetOwnerReferences()))
			}
			var wantUID types.UID
			if tt.wantRef != nil {
				wantUID = tt.wantRef.UID
			}
			if p.ControllerUID() != wantUID {
				t.Errorf("ControllerUID = %q, want %q", p.ControllerUID(), wantUID)
			}
			if got, want := p.Ref(), object.RefOf(in); got != want {
				t.Errorf("Ref = %v, want %v", got, want)
			}
			if got := p.GetObjectKind().GroupVersionKind(); got != in.GroupVersionKind() {
				t.Errorf("GVK = %v, want %v", got, in.GroupVersionKind())
			}
			key, err := metaKey(p)
			if err != nil || key != metaKeyOf(in) {
				t.Errorf("cache key = %q, %v; want %q", key, err, metaKeyOf(in))
			}
			// A caller may change what Object returns: the cache does not see it.
			out.SetLabels(map[string]string{"changed": "yes"})
			again, _ := p.Object()
			if diff := cmp.Diff(in.Object, again.Object); diff != "" {
				t.Errorf("a change to a decoded copy reached the packed object (-want +got):\n%s", diff)
			}
			// The JSON does not repeat what Packed keeps typed.
			for _, field := range []string{`"uid"`, `"resourceVersion"`, `"apiVersion"`, `"kind"`, `"generation"`, `"ownerReferences"`} {
				if tt.allLifted && bytes.Contains(p.raw, []byte(field)) {
					t.Errorf("packed JSON repeats %s: %s", field, p.raw)
				}
			}
			cp := p.DeepCopyObject().(*Packed)
			if !bytes.Equal(cp.raw, p.raw) || cp.GetUID() != p.GetUID() {
				t.Error("DeepCopyObject differs from the original")
			}
		})
	}
}

// A child's cache entry is the slimmed object, packed: it decodes to the
// slimmed object, fingerprint included, so apply's decisions read it as
// before.
func TestPackOfASlimChild(t *testing.T) {
	whole := decoded(t, fixture.WithEntry(t, fixture.Object(t, packedChild), "loom", fixture.LoomFields))
	slim := Slim(whole.DeepCopy(), "loom")
	p, err := Pack(slim)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Object()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(slim.Object, got.Object); diff != "" {
		t.Errorf("decoded (-slim +got):\n%s", diff)
	}
	if Fingerprint(got, "loom") != Fingerprint(whole, "loom") || !IsSlim(got) {
		t.Error("the decoded child lost the fingerprint of Loom's fields")
	}
	if p.GroupKind() != (schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
		t.Errorf("GroupKind = %v", p.GroupKind())
	}
}

func metaKey(obj any) (string, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	return metaKeyOf(o), nil
}

func metaKeyOf(o interface {
	GetNamespace() string
	GetName() string
	GetUID() types.UID
}) string {
	return o.GetNamespace() + "/" + o.GetName() + "/" + string(o.GetUID())
}

// decoded returns obj as the dynamic client decodes it from the API
// server's JSON: integers as int64.
func decoded(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	b, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return out
}

// Any object the API server can send decodes from its packed form to
// exactly what was packed.
func FuzzPackRoundTrip(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"1","generation":2}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","ownerReferences":[{"apiVersion":"x/v1","kind":"K","name":"p","uid":"p1","controller":true}]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"ownerReferences":[{"apiVersion":"x/v1","kind":"K","name":"p","uid":"p1","controller":true,"blockOwnerDeletion":true,"extra":1}]}}`,
		`{"kind":"","metadata":{"name":"","generation":0},"spec":{"replicas":1.5}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &unstructured.Unstructured{}
		if err := in.UnmarshalJSON(data); err != nil {
			return
		}
		p, err := Pack(in)
		if err != nil {
			t.Skip("not encodable")
		}
		out, err := p.Object()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(in.Object, out.Object); diff != "" {
			t.Errorf("round trip of %s (-in +out):\n%s", data, diff)
		}
	})
}
