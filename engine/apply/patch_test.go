package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/internal/fixture"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDecidePatch: a patch child is applied by its own step whatever the
// child cache holds (it is not Loom's child, so the cache holds it only
// while a switch from full is on its way).
func TestDecidePatch(t *testing.T) {
	mine := fixture.Object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns,
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true}]}}`)
	for _, cached := range []*unstructured.Unstructured{nil, mine} {
		if got := Decide(object.ManagePatch, cached, "p1"); got != StepPatch {
			t.Errorf("Decide(patch, %v) = %q, want %q", cached != nil, got, StepPatch)
		}
	}
}

// TestApplyManagedPatch: the requests a patch child sends. One that does
// not exist is never created (the parent waits); one that exists is read
// in full once, for Loom's managedFields entry, and applied without an
// ownerReference or Loom's labels; then, as long as the object's version
// is the one Loom's apply gave it, nothing at all is sent; a write of
// another writer's own fields costs one read, no apply.
func TestApplyManagedPatch(t *testing.T) {
	const child = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: ns
  labels: {team: a}
  annotations: {loom.dev/manage: patch}
`
	theirs := `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: u1, resourceVersion: "40",
  labels: {owner: them}}, data: {a: "0"}}`

	// Missing: nothing is sent, and no object is reported.
	a, got := guardedServer(nil, nil, "u1", "41")
	r := a.ApplyManaged(t.Context(), fixture.Object(t, child), nil, "p1", observer{})
	if r.Err != nil || r.Action != object.Unchanged || r.Object != nil {
		t.Errorf("missing patch child: %s, object %v, err %v; want unchanged with no object", r.Action, r.Object != nil, r.Err)
	}
	if d := cmp.Diff([]string{}, *got); d != "" {
		t.Errorf("requests for a missing patch child (-want +got):\n%s", d)
	}

	// Present: one read, one apply (never a create), no ownerReference,
	// no Loom label.
	server := fixture.Object(t, theirs)
	a, got = guardedServer(server, nil, "u1", "41")
	obs := observer{"ns/web": server.Object}
	r = a.ApplyManaged(t.Context(), fixture.Object(t, child), nil, "p1", obs)
	if r.Err != nil || r.Action != object.Configured {
		t.Fatalf("patch: %s (%v), want configured", r.Action, r.Err)
	}
	if d := cmp.Diff([]string{"get", "apply"}, *got); d != "" {
		t.Errorf("requests of the first patch (-want +got):\n%s", d)
	}
	if len(r.Object.GetOwnerReferences()) != 0 || r.Object.GetLabels()[object.LabelManagedBy] != "" || r.Object.GetLabels()["team"] != "a" {
		t.Errorf("patch sent %v, want team: a and no ownerReference or Loom label", r.Object.Object["metadata"])
	}

	// Steady state: the lookup read is the object as Loom's apply left it.
	*got = []string{}
	obs["ns/web"] = r.Object.DeepCopy().Object
	if r := a.ApplyManaged(t.Context(), fixture.Object(t, child), nil, "p1", obs); r.Action != object.Unchanged || r.Object == nil {
		t.Errorf("steady patch child: %s (%v), want unchanged with its object", r.Action, r.Err)
	}
	if d := cmp.Diff([]string{}, *got); d != "" {
		t.Errorf("requests in steady state (-want +got):\n%s", d)
	}

	// Another writer's write of its own field: a new version, one read of
	// the entry, which is as Loom left it: no apply.
	other := r.Object.DeepCopy()
	other.SetResourceVersion("42")
	other.Object["data"] = map[string]any{"a": "1"}
	*server = *other.DeepCopy()
	obs["ns/web"] = other.Object
	if r := a.ApplyManaged(t.Context(), fixture.Object(t, child), nil, "p1", obs); r.Action != object.Unchanged {
		t.Errorf("patch child after another writer's write: %s (%v), want unchanged", r.Action, r.Err)
	}
	if d := cmp.Diff([]string{"get"}, *got); d != "" {
		t.Errorf("requests after another writer's write (-want +got):\n%s", d)
	}
	// And the read is remembered: no read the next time.
	*got = []string{}
	a.ApplyManaged(t.Context(), fixture.Object(t, child), nil, "p1", obs)
	if d := cmp.Diff([]string{}, *got); d != "" {
		t.Errorf("requests after the read (-want +got):\n%s", d)
	}
}

// TestGiveBack: giving Loom's fields back is one apply naming the object
// and nothing else, for an object Loom patched; none for one that is gone
// or that does not say Loom patches it.
func TestGiveBack(t *testing.T) {
	ref := object.Ref{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "ns", Name: "web"}
	tests := []struct {
		name   string
		server string
		want   []string
		action object.Action
	}{
		{"patched", `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: u1, labels: {team: a}, annotations: {loom.dev/manage: patch}}}`,
			[]string{"get", "apply"}, object.Orphaned},
		{"not patched", `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: u1}}`, []string{"get"}, ""},
		{"gone", "", []string{"get"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var server *unstructured.Unstructured
			if tt.server != "" {
				server = fixture.Object(t, tt.server)
			}
			a, got := guardedServer(server, nil, "u1", "41")
			cs := a.GiveBack(t.Context(), []object.Ref{ref})
			if err := cs.Err(); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, *got); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
			var action object.Action
			if len(cs) == 1 {
				action = cs[0].Action
			}
			if action != tt.action {
				t.Errorf("action %q, want %q", action, tt.action)
			}
		})
	}
}

// TestPatchRefusesAnotherParentsChild: a patch child may not name an
// object that is another parent's child (Loom's label, another
// controller): the patch, under Loom's one field manager, would strip
// that parent's ownerReference and labels. Its own parent's child (a
// switch from full) is patched.
func TestPatchRefusesAnotherParentsChild(t *testing.T) {
	const child = `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, labels: {team: a}, annotations: {loom.dev/manage: patch}}}`
	owned := func(uid string) string {
		return `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: u1, resourceVersion: "40",
  labels: {app.kubernetes.io/managed-by: loom},
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: ` + uid + `, controller: true}]}}`
	}
	for _, tt := range []struct {
		owner string
		want  []string
		err   bool
	}{
		{owner: "p2", want: []string{"get"}, err: true},
		{owner: "p1", want: []string{"get", "apply"}},
	} {
		server := fixture.Object(t, owned(tt.owner))
		a, got := guardedServer(server, nil, "u1", "41")
		r := a.ApplyManaged(t.Context(), fixture.Object(t, child), server, "p1", observer{"ns/web": server.Object})
		if (r.Err != nil) != tt.err {
			t.Errorf("owner %s: err %v, want an error: %v", tt.owner, r.Err, tt.err)
		}
		if d := cmp.Diff(tt.want, *got); d != "" {
			t.Errorf("owner %s: requests (-want +got):\n%s", tt.owner, d)
		}
	}
}

// TestPatchNeverLeavesAnObjectItCreated: a server-side apply creates a
// missing object, so an object deleted between Loom's read and its apply
// (of a patch child, or of giving Loom's fields back) would be made anew,
// with Loom's fields alone: a Namespace of nothing but a label. The apply
// answers a new UID then, and Loom deletes that object at once, on the
// condition that it is the one its apply made.
func TestPatchNeverLeavesAnObjectItCreated(t *testing.T) {
	const child = `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, labels: {team: a}, annotations: {loom.dev/manage: patch}}}`
	theirs := `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: ns, uid: u1, resourceVersion: "40", labels: {owner: them},
  annotations: {loom.dev/manage: patch}}}`

	// The apply answers uid u2: the object read (u1) was deleted between.
	server := fixture.Object(t, theirs)
	a, got := guardedServer(server, nil, "u2", "41")
	r := a.ApplyManaged(t.Context(), fixture.Object(t, child), nil, "p1", observer{"ns/web": server.Object})
	if r.Object != nil || r.Action == object.Configured {
		t.Errorf("patch of an object recreated by the apply: %s, object %v; want no object (the parent waits)", r.Action, r.Object != nil)
	}
	if d := cmp.Diff([]string{"get", "apply", "delete+uid=u2"}, *got); d != "" {
		t.Errorf("requests of a patch whose object went (-want +got):\n%s", d)
	}

	a, got = guardedServer(server, nil, "u2", "41")
	a.GiveBack(t.Context(), []object.Ref{object.RefOf(server)})
	if d := cmp.Diff([]string{"get", "apply", "delete+uid=u2"}, *got); d != "" {
		t.Errorf("requests of giving back to an object that went (-want +got):\n%s", d)
	}
}
