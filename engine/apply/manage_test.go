package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/internal/fixture"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDecideByMode tables which step each mode takes for each live state:
// create-only writes only a child that is missing, observe never writes
// but to release an object that is still this parent's child (a child
// switched from full or create-only), and full applies as Apply decides.
func TestDecideByMode(t *testing.T) {
	mine := fixture.Object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns,
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true}]}}`)
	others := fixture.Object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns,
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p2, controller: true}]}}`)
	tests := []struct {
		mode   string
		cached *unstructured.Unstructured
		want   Step
	}{
		{object.ManageFull, nil, StepApply},
		{object.ManageFull, mine, StepApply},
		{object.ManageCreateOnly, nil, StepCreate},
		{object.ManageCreateOnly, mine, StepKeep},
		{object.ManageCreateOnly, others, StepKeep},
		{object.ManageObserve, nil, StepRead},
		{object.ManageObserve, mine, StepRelease},
		{object.ManageObserve, others, StepRead},
		{"", nil, StepApply},
	}
	for _, tt := range tests {
		name := tt.mode + "/none"
		if tt.cached != nil {
			name = tt.mode + "/" + string(metaUID(tt.cached))
		}
		t.Run(name, func(t *testing.T) {
			if got := Decide(tt.mode, tt.cached, "p1"); got != tt.want {
				t.Errorf("Decide(%q) = %q, want %q", tt.mode, got, tt.want)
			}
		})
	}
}

func metaUID(o *unstructured.Unstructured) string {
	return string(o.GetOwnerReferences()[0].UID)
}

// observer answers ApplyManaged's reads of observed children.
type observer map[string]map[string]any

func (o observer) Get(gvk schema.GroupVersionKind, namespace, name string) (map[string]any, error) {
	return o[namespace+"/"+name], nil
}

// TestApplyManagedRequests: the requests each mode sends. A create-only
// child that exists, in the cache or only on the server (the cache is
// behind), is never written; an observed child is only read.
func TestApplyManagedRequests(t *testing.T) {
	const child = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: ns
  labels: {applyset.kubernetes.io/part-of: applyset-mine-v1}
  annotations: {loom.dev/manage: create-only}
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true}]
data: {a: "1"}
`
	own := `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: u1, resourceVersion: "40",
  labels: {applyset.kubernetes.io/part-of: applyset-mine-v1},
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true}]}, data: {a: "0"}}`
	observed := `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, annotations: {loom.dev/manage: observe}}}`
	tests := []struct {
		name       string
		desired    string
		cached     string // "" when the cache holds none
		server     string // "" when the name is free on the server
		obs        observer
		want       []string
		wantAction object.Action
		wantObject bool
	}{
		{name: "create-only, missing: one create", desired: child, want: []string{"apply+rv"}, wantAction: object.Created, wantObject: true},
		{name: "create-only, cached: nothing", desired: child, cached: own, server: own, want: []string{}, wantAction: object.Unchanged, wantObject: true},
		// adoption reads it, then createOnly reads it for the result: a
		// rare path (the cache is behind a write of someone else's).
		{name: "create-only, on the server only: a refused create, reads, no update", desired: child, server: own,
			want: []string{"apply+rv", "get", "get"}, wantAction: object.Unchanged, wantObject: true},
		{name: "observe, present: no request", desired: observed, obs: observer{"ns/web": fixture.Object(t, own).Object},
			want: []string{}, wantAction: object.Unchanged, wantObject: true},
		{name: "observe, missing: no request, no object", desired: observed, obs: observer{},
			want: []string{}, wantAction: object.Unchanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var server, cached *unstructured.Unstructured
			if tt.server != "" {
				server = fixture.Object(t, tt.server)
			}
			if tt.cached != "" {
				cached = fixture.Object(t, tt.cached)
			}
			a, got := guardedServer(server, nil, "u1", "41")
			r := a.ApplyManaged(t.Context(), fixture.Object(t, tt.desired), cached, "p1", tt.obs)
			if r.Err != nil {
				t.Fatalf("ApplyManaged: %v", r.Err)
			}
			if d := cmp.Diff(tt.want, *got); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
			if r.Action != tt.wantAction || (r.Object != nil) != tt.wantObject {
				t.Errorf("result %s with object %v, want %s with object %v", r.Action, r.Object != nil, tt.wantAction, tt.wantObject)
			}
		})
	}
	// A create-only child created once is not written again while the
	// cache has not caught up, even when its template changed meanwhile.
	a, got := guardedServer(nil, nil, "u1", "41")
	a.ApplyManaged(t.Context(), fixture.Object(t, child), nil, "p1", nil)
	changed := fixture.Object(t, child)
	changed.Object["data"] = map[string]any{"a": "2"}
	if r := a.ApplyManaged(t.Context(), changed, nil, "p1", nil); r.Action != object.Unchanged {
		t.Errorf("second create-only apply behind the cache: %s (%v), want unchanged", r.Action, r.Err)
	}
	if d := cmp.Diff([]string{"apply+rv"}, *got); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
}
