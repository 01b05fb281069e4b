package finalizer

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
)

// A guard's annotation, which whoever writes the parent may write, steers
// Loom's lists only through the kinds the parent's set declares.
func TestGuardedKinds(t *testing.T) {
	fsys := fstest.MapFS{
		"loom.yaml": {Data: []byte("parent: {apiVersion: example.com/v1, kind: App}\nclusterScoped:\n  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}\n")},
		"a.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n---\n" +
			"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Name }}\n")},
	}
	set, err := render.LoadFS(fsys, "app")
	if err != nil {
		t.Fatal(err)
	}
	parent := &unstructured.Unstructured{}
	parent.SetAnnotations(map[string]string{
		object.AnnotationClusterKinds: "ClusterRole.rbac.authorization.k8s.io,Node,Namespace",
		object.AnnotationOrphanKinds:  "ConfigMap,Secret,ClusterRole.rbac.authorization.k8s.io",
	})
	for _, tc := range []struct {
		name          string
		g             *guard
		kept, ignored []schema.GroupKind
	}{
		{name: "cluster-kinds: those clusterScoped declares", g: clusterGuard,
			kept:    []schema.GroupKind{{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}},
			ignored: []schema.GroupKind{{Kind: "Node"}, {Kind: "Namespace"}}},
		{name: "orphan-kinds: those the templates name", g: orphanGuard,
			kept:    []schema.GroupKind{{Kind: "ConfigMap"}, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}},
			ignored: []schema.GroupKind{{Kind: "Secret"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, ignored := guardedKinds(parent, tc.g, declaredKinds(set, tc.g))
			if diff := cmp.Diff(tc.kept, kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ignored, ignored); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
		})
	}
}
