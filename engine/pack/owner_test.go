package pack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestOwner checks that a packed object's controller is its controller
// ownerReference or, without one, the parent loom.dev/owner names, in
// both packers' output.
func TestOwner(t *testing.T) {
	tests := []struct {
		name, json   string
		uid, ns, own string
	}{
		{name: "controller ownerReference",
			json: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a","uid":"c1","ownerReferences":[{"apiVersion":"example.loom.dev/v1alpha1","kind":"MyResource","name":"web","uid":"p1","controller":true}]}}`,
			uid:  "p1", ns: "team-a", own: "web"},
		{name: "controller among other owners",
			json: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a","uid":"c1","ownerReferences":[{"apiVersion":"v1","kind":"Namespace","name":"team-a","uid":"n1"},{"apiVersion":"example.loom.dev/v1alpha1","kind":"MyResource","name":"web","uid":"p1","controller":true}]}}`,
			uid:  "p1", ns: "team-a", own: "web"},
		{name: "cluster-scoped child named by the annotation",
			json: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r","uid":"c1","labels":{"app.kubernetes.io/managed-by":"loom"},"annotations":{"other":"x","loom.dev/owner":"example.loom.dev/v1alpha1/MyResource/team-a/web/p1"}},"rules":[]}`,
			uid:  "p1", ns: "team-a", own: "web"},
		{name: "the controller wins over the annotation",
			json: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-b","uid":"c1","annotations":{"loom.dev/owner":"example.loom.dev/v1alpha1/MyResource/team-a/web/p1"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d","uid":"d1","controller":true}]}}`,
			uid:  "d1", ns: "team-b", own: "d"},
		{name: "the annotation means nothing on a namespaced object",
			json: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a","uid":"c1","annotations":{"loom.dev/owner":"example.loom.dev/v1alpha1/MyResource/team-a/web/p1"}}}`},
		{name: "a child placed in a workload cluster, named by the annotation",
			json: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a","uid":"c1","labels":{"app.kubernetes.io/managed-by":"loom"},"annotations":{"loom.dev/cluster":"eu-1","loom.dev/owner":"example.loom.dev/v1alpha1/MyResource/team-a/web/p1"}}}`,
			uid:  "p1", ns: "team-a", own: "web"},
		{name: "a child placed in a workload cluster cannot name a parent of another namespace",
			json: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-b","uid":"c1","annotations":{"loom.dev/cluster":"eu-1","loom.dev/owner":"example.loom.dev/v1alpha1/MyResource/team-a/web/p1"}}}`},
		{name: "a malformed annotation is no owner",
			json: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r","uid":"c1","annotations":{"loom.dev/owner":"web"}}}`},
		{name: "no owner",
			json: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r","uid":"c1"}}`},
	}
	for _, tt := range tests {
		for _, packer := range packers {
			t.Run(tt.name+"/"+packer.name, func(t *testing.T) {
				p, err := packer.pack([]byte(tt.json))
				if err != nil {
					t.Fatal(err)
				}
				ref, ns := p.Owner()
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON([]byte(tt.json)); err != nil {
					t.Fatal(err)
				}
				uref, uns := object.OwnerOf(u)
				if diff := cmp.Diff(uref, ref); diff != "" || uns != ns {
					t.Errorf("Owner() and object.OwnerOf decide apart: namespace %q and %q, reference (-OwnerOf +Owner):\n%s", uns, ns, diff)
				}
				if got := p.OwnerUID(); got != types.UID(tt.uid) {
					t.Errorf("OwnerUID() = %q, want %q", got, tt.uid)
				}
				if tt.uid == "" {
					if ref != nil {
						t.Errorf("Owner() = %+v, want nil", ref)
					}
					return
				}
				if ref == nil || ref.UID != types.UID(tt.uid) || ref.Name != tt.own || ns != tt.ns || ref.Controller == nil || !*ref.Controller {
					t.Errorf("Owner() = %+v, %q; want a controller reference to %s (uid %s) in %q", ref, ns, tt.own, tt.uid, tt.ns)
				}
			})
		}
	}
}

// packers are the ways an informer packs an object: Pack of the decoded
// object, and the JSON packers (slim, as child informers use, and strip).
var packers = []struct {
	name string
	pack func([]byte) (*Packed, error)
}{
	{"Pack", func(b []byte) (*Packed, error) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			return nil, err
		}
		return Pack(u)
	}},
	{"SlimJSON", func(b []byte) (*Packed, error) { return SlimJSON(b, "loom") }},
	{"StripJSON", StripJSON},
}
