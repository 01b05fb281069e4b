package apply

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/internal/fixture"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// A child that neither the cache nor a record knows is created by one
// apply that the API server refuses when the name is taken (a
// resourceVersion precondition no stored object meets); only then is the
// object read, for adoption to decide. The fake client plays the API
// server's part of that: a conflict when the object exists.
func TestCreateIsOneRequestAndNeverOverwrites(t *testing.T) {
	const child = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: ns
  labels: {applyset.kubernetes.io/part-of: applyset-mine-v1}
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true}]
data: {a: "1"}
`
	handMade := `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: other, resourceVersion: "40"}, data: {a: "0"}}`
	consented := `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: other, resourceVersion: "40",
  annotations: {loom.dev/adopt: MyResource.example.loom.dev/web}}}`
	refused := apierrors.NewInternalError(errors.New("resourceVersion should not be set on objects to be created"))
	tests := []struct {
		name     string
		existing string // "" when the name is free
		// createErr is what the server answers a create-only apply when
		// the name is free, instead of creating.
		createErr error
		// children is how many children of the kind are applied in turn.
		children  int
		want      []string // requests, in order: "apply+rv" is the create-only apply
		wantErr   error
		wantApply bool
	}{
		{name: "name free: one request", children: 1, want: []string{"apply+rv"}, wantApply: true},
		{name: "name taken by a hand-made object: refused, not written", existing: handMade, children: 1,
			want: []string{"apply+rv", "get"}, wantErr: &object.NotAdoptedError{}},
		{name: "name taken by an object handed over: adopted", existing: consented, children: 1,
			want: []string{"apply+rv", "get", "apply"}, wantApply: true},
		{name: "a server that refuses a resourceVersion on create: read, then apply, from then on", createErr: refused, children: 2,
			want: []string{"apply+rv", "get", "apply", "get", "apply"}, wantApply: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var existing *unstructured.Unstructured
			if tt.existing != "" {
				existing = fixture.Object(t, tt.existing)
			}
			a, got := guardedServer(existing, tt.createErr, "new", "41")
			for i := range tt.children {
				desired := fixture.Object(t, child)
				desired.SetName(fmt.Sprintf("web-%d", i))
				r := a.Apply(t.Context(), desired, nil)
				if tt.wantErr != nil {
					var nae *object.NotAdoptedError
					if !errors.As(r.Err, &nae) {
						t.Fatalf("err = %v, want an object.NotAdoptedError", r.Err)
					}
					continue
				}
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				if tt.wantApply && r.Action != object.Created {
					t.Errorf("action = %s, want created", r.Action)
				}
				if r.Object.GetResourceVersion() != "41" {
					t.Errorf("result is not the server's answer: resourceVersion %q", r.Object.GetResourceVersion())
				}
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// A child the cache does not hold is created with the guard even when Loom
// has a record of applying it (from another desired object): the record
// says the name was Loom's child once, not that it still is. Deleted and
// replaced by someone else's object of the same name while the delete
// event is still queued, it must be refused, not taken over by a forced
// apply.
func TestApplyGuardsTheCreateWhenTheCacheHoldsNothing(t *testing.T) {
	const child = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: ns
  labels: {applyset.kubernetes.io/part-of: applyset-mine-v1}
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true}]
data: {a: "1"}
`
	replaced := fixture.Object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: other, resourceVersion: "50"}, data: {a: "0"}}`)
	a, got := guardedServer(replaced, nil, "other", "51")
	// Loom applied the child from an earlier template, and its watch
	// delivered that write.
	a.remember(object.RefOf(fixture.Object(t, child)), newRecord("hash-of-the-earlier-template", "mine", "40", "", "fields"))
	a.Observe(object.RefOf(fixture.Object(t, child)), "40")

	r := a.Apply(t.Context(), fixture.Object(t, child), nil)
	var nae *object.NotAdoptedError
	if !errors.As(r.Err, &nae) {
		t.Errorf("Apply = %s (err %v), want an object.NotAdoptedError", r.Action, r.Err)
	}
	if diff := cmp.Diff([]string{"apply+rv", "get"}, *got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// guardedServer returns an Applier whose fake API server holds existing
// (nil for a free name) as its one ConfigMap and records the requests it
// gets: "get", "apply+rv" (a create-only apply: a conflict when the name
// is taken, else createErr if set) and "apply". An apply that writes
// answers the object sent, with uid and resourceVersion rv.
func guardedServer(existing *unstructured.Unstructured, createErr error, uid, rv string) (*Applier, *[]string) {
	gr := schema.GroupResource{Resource: "configmaps"}
	got := &[]string{}
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	client.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		*got = append(*got, "get")
		if existing == nil {
			return true, nil, apierrors.NewNotFound(gr, "web")
		}
		return true, existing.DeepCopy(), nil
	})
	client.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		var body unstructured.Unstructured
		if err := json.Unmarshal(a.(clienttesting.PatchAction).GetPatch(), &body.Object); err != nil {
			return true, nil, err
		}
		if body.GetResourceVersion() != "" {
			*got = append(*got, "apply+rv")
			if existing != nil {
				return true, nil, apierrors.NewConflict(gr, "web", errors.New("the object has been modified"))
			}
			if createErr != nil {
				return true, nil, createErr
			}
		} else {
			*got = append(*got, "apply")
		}
		body.SetResourceVersion(rv)
		body.SetUID(types.UID(uid))
		return true, &body, nil
	})
	client.PrependReactor("delete", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		req := "delete"
		if p := a.(clienttesting.DeleteActionImpl).DeleteOptions.Preconditions; p != nil && p.UID != nil {
			req += "+uid=" + string(*p.UID)
		}
		*got = append(*got, req)
		return true, nil, nil
	})
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}}) // the default version: GiveBack maps a kind without one
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	return New(client, mapper, "loom"), got
}
