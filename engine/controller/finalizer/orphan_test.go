package finalizer

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/object"
)

func TestOrphanKinds(t *testing.T) {
	kept := func(kind, name string) string {
		return `{apiVersion: v1, kind: ` + kind + `, metadata: {name: ` + name + `, namespace: ns, annotations: {loom.dev/delete-policy: orphan}}}`
	}
	plain := `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: ns}}`
	deleted := `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: ns, annotations: {loom.dev/delete-policy: delete}}}`
	tests := []struct {
		name            string
		rendered, owned []string
		want            []schema.GroupKind
	}{
		{name: "none to keep", rendered: []string{plain, deleted}, owned: []string{plain}},
		{name: "rendered", rendered: []string{plain, kept("PersistentVolumeClaim", "data")},
			want: []schema.GroupKind{{Kind: "PersistentVolumeClaim"}}},
		{name: "cached only (annotated by hand)", rendered: []string{plain}, owned: []string{kept("ConfigMap", "cfg")},
			want: []schema.GroupKind{{Kind: "ConfigMap"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := orphanKinds(objs(t, tt.rendered), objs(t, tt.owned))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("orphanKinds (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFinalizerPatch checks the parent's finalizer and kinds after the
// patch, applied as the API server would: added before a child to keep is
// applied, the kinds only growing while it stays, others' finalizers and
// annotations untouched, and no patch at all when nothing changes.
func TestFinalizerPatch(t *testing.T) {
	pvc, cm := schema.GroupKind{Kind: "PersistentVolumeClaim"}, schema.GroupKind{Kind: "ConfigMap"}
	tests := []struct {
		name   string
		parent string
		want   []schema.GroupKind
		// after is the parent's metadata after the patch; "" for no patch.
		after string
	}{
		{name: "nothing to keep", parent: `{metadata: {uid: p, resourceVersion: "5"}}`},
		{name: "first child to keep", parent: `{metadata: {uid: p, resourceVersion: "5"}}`, want: []schema.GroupKind{pvc},
			after: `{uid: p, resourceVersion: "5", finalizers: [loom.dev/orphan], annotations: {loom.dev/orphan-kinds: PersistentVolumeClaim}}`},
		{name: "others' finalizers and annotations stay",
			parent: `{metadata: {uid: p, resourceVersion: "5", finalizers: [example.com/x], annotations: {a: b}}}`, want: []schema.GroupKind{pvc},
			after: `{uid: p, resourceVersion: "5", finalizers: [example.com/x, loom.dev/orphan], annotations: {a: b, loom.dev/orphan-kinds: PersistentVolumeClaim}}`},
		{name: "already there",
			parent: `{metadata: {uid: p, resourceVersion: "5", finalizers: [loom.dev/orphan], annotations: {loom.dev/orphan-kinds: "ConfigMap,PersistentVolumeClaim"}}}`,
			want:   []schema.GroupKind{pvc}},
		{name: "a new kind is added, none is dropped",
			parent: `{metadata: {uid: p, resourceVersion: "5", finalizers: [loom.dev/orphan], annotations: {loom.dev/orphan-kinds: PersistentVolumeClaim}}}`,
			want:   []schema.GroupKind{cm},
			after:  `{uid: p, resourceVersion: "5", finalizers: [loom.dev/orphan], annotations: {loom.dev/orphan-kinds: "ConfigMap,PersistentVolumeClaim"}}`},
		{name: "the finalizer removed by hand comes back",
			parent: `{metadata: {uid: p, resourceVersion: "5", annotations: {loom.dev/orphan-kinds: PersistentVolumeClaim}}}`,
			want:   []schema.GroupKind{pvc},
			after:  `{uid: p, resourceVersion: "5", finalizers: [loom.dev/orphan], annotations: {loom.dev/orphan-kinds: PersistentVolumeClaim}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := yamlObj(t, tt.parent)
			ops := finalizerPatch(parent, orphanGuard, tt.want)
			if tt.after == "" {
				if ops != nil {
					t.Fatalf("finalizerPatch = %v, want no patch", ops)
				}
				return
			}
			got := applyOps(t, parent, ops)
			if diff := cmp.Diff(yamlObj(t, tt.after).Object, got.Object["metadata"]); diff != "" {
				t.Errorf("metadata after the patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRemoveFinalizerPatch(t *testing.T) {
	tests := []struct {
		name, parent, after string
	}{
		{name: "none", parent: `{metadata: {uid: p, resourceVersion: "5", finalizers: [example.com/x]}}`},
		{name: "removed, others stay",
			parent: `{metadata: {uid: p, resourceVersion: "5", finalizers: [example.com/x, loom.dev/orphan, example.com/y], annotations: {a: b, loom.dev/orphan-kinds: ConfigMap}}}`,
			after:  `{uid: p, resourceVersion: "5", finalizers: [example.com/x, example.com/y], annotations: {a: b}}`},
		{name: "only the annotation left",
			parent: `{metadata: {uid: p, resourceVersion: "5", annotations: {loom.dev/orphan-kinds: ConfigMap}}}`,
			after:  `{uid: p, resourceVersion: "5", annotations: {}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := yamlObj(t, tt.parent)
			ops := removeFinalizerPatch(parent, orphanGuard)
			if tt.after == "" {
				if ops != nil {
					t.Fatalf("removeFinalizerPatch = %v, want no patch", ops)
				}
				return
			}
			got := applyOps(t, parent, ops)
			if diff := cmp.Diff(yamlObj(t, tt.after).Object, got.Object["metadata"]); diff != "" {
				t.Errorf("metadata after the patch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParentPatchesAreConditional checks that both patches apply only to
// the parent they were computed from.
func TestParentPatchesAreConditional(t *testing.T) {
	parent := yamlObj(t, `{metadata: {uid: p, resourceVersion: "5", finalizers: [loom.dev/orphan], annotations: {loom.dev/orphan-kinds: ConfigMap}}}`)
	other := parent.DeepCopy()
	other.SetUID("q")
	for name, ops := range map[string][]patchOp{
		"add":    finalizerPatch(parent, orphanGuard, []schema.GroupKind{{Kind: "Secret"}}),
		"remove": removeFinalizerPatch(parent, orphanGuard),
	} {
		want := []patchOp{{Op: "test", Path: "/metadata/uid", Value: "p"}, {Op: "replace", Path: "/metadata/resourceVersion", Value: "5"}}
		if diff := cmp.Diff(want, ops[:2]); diff != "" {
			t.Errorf("%s: preconditions (-want +got):\n%s", name, diff)
		}
		body, _ := json.Marshal(ops)
		p, _ := jsonpatch.DecodePatch(body)
		doc, _ := json.Marshal(other.Object)
		if _, err := p.Apply(doc); err == nil {
			t.Errorf("%s: the patch applied to a parent with another UID", name)
		}
	}
}

func yamlObj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func objs(t *testing.T, ys []string) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(ys))
	for _, y := range ys {
		out = append(out, yamlObj(t, y))
	}
	return out
}

func applyOps(t *testing.T, obj *unstructured.Unstructured, ops []patchOp) *unstructured.Unstructured {
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

func TestIsOrDroppedChildOf(t *testing.T) {
	parent := yamlObj(t, `{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, metadata: {name: web, namespace: ns, uid: p1}}`)
	id := object.ApplySetID("web", "ns", "MyResource", "example.loom.dev")
	ref := func(uid string) string {
		return `[{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: ` + uid + `, controller: true}]`
	}
	tests := []struct {
		name, obj string
		want      bool
	}{
		{"its child", `{metadata: {labels: {applyset.kubernetes.io/part-of: ` + id + `}, ownerReferences: ` + ref("p1") + `}}`, true},
		{"reference dropped by the garbage collector", `{metadata: {labels: {applyset.kubernetes.io/part-of: ` + id + `},
  ownerReferences: [{apiVersion: v1, kind: Namespace, name: ns, uid: n1}]}}`, true},
		{"another parent's controller", `{metadata: {labels: {applyset.kubernetes.io/part-of: ` + id + `}, ownerReferences: ` + ref("p2") + `}}`, false},
		{"another set's label", `{metadata: {labels: {applyset.kubernetes.io/part-of: other}}}`, false},
		{"no label", `{metadata: {ownerReferences: ` + ref("p1") + `}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isOrDroppedChildOf(yamlObj(t, tt.obj), parent); got != tt.want {
				t.Errorf("isOrDroppedChildOf = %v, want %v", got, tt.want)
			}
		})
	}
}
