package finalizer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
)

// TestRecordPatch: before a patch child is applied the parent gets the
// patches finalizer and a record listing it beside what the record lists
// (it only grows before an apply); nothing is written when it has them;
// more objects than the bound is an error.
func TestRecordPatch(t *testing.T) {
	sa := yamlObj(t, `{apiVersion: v1, kind: ServiceAccount, metadata: {name: builder, namespace: shared, annotations: {loom.dev/manage: patch}}}`)
	ns := yamlObj(t, `{apiVersion: v1, kind: Namespace, metadata: {name: team, annotations: {loom.dev/manage: patch}}}`)
	full := yamlObj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: site, namespace: p}}`)
	tests := []struct {
		name, parent string
		after        string // the parent's metadata after the patch; "" for none
	}{
		{name: "first", parent: `{metadata: {uid: p, resourceVersion: "5"}}`,
			after: `{uid: p, resourceVersion: "5", finalizers: [loom.dev/patches], annotations: {loom.dev/patches: "Namespace//team,ServiceAccount/shared/builder"}}`},
		{name: "recorded", parent: `{metadata: {uid: p, resourceVersion: "5", finalizers: [loom.dev/patches], annotations: {loom.dev/patches: "Namespace//team,ServiceAccount/shared/builder"}}}`},
		{name: "grows", parent: `{metadata: {uid: p, resourceVersion: "5", finalizers: [x, loom.dev/patches], annotations: {a: b, loom.dev/patches: "ConfigMap/p/old"}}}`,
			after: `{uid: p, resourceVersion: "5", finalizers: [x, loom.dev/patches], annotations: {a: b, loom.dev/patches: "ConfigMap/p/old,Namespace//team,ServiceAccount/shared/builder"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := yamlObj(t, tt.parent)
			ops, err := recordPatch(parent, patchTargets(objs2(sa, ns, full)))
			if err != nil {
				t.Fatal(err)
			}
			if tt.after == "" {
				if ops != nil {
					t.Errorf("patch %v, want none", ops)
				}
				return
			}
			got := applyOps(t, parent, ops)
			if d := cmp.Diff(yamlObj(t, `{metadata: `+tt.after+`}`).Object["metadata"], got.Object["metadata"]); d != "" {
				t.Errorf("parent's metadata (-want +got):\n%s", d)
			}
		})
	}
	var refs []object.Ref
	for i := 0; i <= object.MaxPatchTargets; i++ {
		refs = append(refs, object.Ref{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "p", Name: "c" + strings.Repeat("x", i)})
	}
	if _, err := recordPatch(yamlObj(t, `{metadata: {uid: p}}`), refs); err == nil {
		t.Errorf("recordPatch of %d objects succeeded", len(refs))
	}
}

// TestToGiveBack: a recorded object is given back when no child renders
// it any more, or only as observed; not while it is patched, or managed
// in full or create-only (switched: Loom's apply keeps its fields).
func TestToGiveBack(t *testing.T) {
	rendered := objs2(
		yamlObj(t, `{apiVersion: v1, kind: ServiceAccount, metadata: {name: builder, namespace: shared, annotations: {loom.dev/manage: patch}}}`),
		yamlObj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: full, namespace: p}}`),
		yamlObj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: seen, namespace: p, annotations: {loom.dev/manage: observe}}}`),
	)
	recorded, _ := object.ParsePatchTargets("ConfigMap/p/full,ConfigMap/p/gone,ConfigMap/p/seen,ServiceAccount/shared/builder")
	got := object.FormatPatchTargets(toGiveBack(recorded, rendered))
	if want := "ConfigMap/p/gone,ConfigMap/p/seen"; got != want {
		t.Errorf("toGiveBack = %q, want %q", got, want)
	}
}

// TestMayGiveBack: of a record written by hand, Loom gives back only the
// objects its set may patch: kinds its lookups declare, in the parent's
// namespace or one declared for the kind, or cluster-scoped.
func TestMayGiveBack(t *testing.T) {
	s, err := render.LoadSources("set", map[string][]byte{
		"loom.yaml": []byte("parent: {apiVersion: example.com/v1, kind: App}\nlookups:\n" +
			"  - {apiVersion: v1, kind: Namespace}\n  - {apiVersion: v1, kind: ServiceAccount, namespaces: [shared]}\n"),
		"a.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	parent := yamlObj(t, `{apiVersion: example.com/v1, kind: App, metadata: {name: a, namespace: p, annotations: {loom.dev/patches: `+
		`"Namespace//team,ServiceAccount/shared/builder,ServiceAccount/p/own,ServiceAccount/other/x,Secret/p/s"}}}`)
	got := object.FormatPatchTargets(mayGiveBack(s, parent))
	if want := "Namespace//team,ServiceAccount/p/own,ServiceAccount/shared/builder"; got != want {
		t.Errorf("mayGiveBack = %q, want %q", got, want)
	}
}

func objs2(o ...*unstructured.Unstructured) []*unstructured.Unstructured { return o }
