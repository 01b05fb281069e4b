package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestParseOwner checks that ParseOwner reads what FormatOwner writes, for
// core and grouped kinds, and nothing else.
func TestParseOwner(t *testing.T) {
	yes := true
	tests := []struct {
		name, in string
		want     *metav1.OwnerReference
		ns       string
	}{
		{name: "grouped kind", in: "example.loom.dev/v1alpha1/MyResource/team-a/web/uid-1",
			want: &metav1.OwnerReference{APIVersion: "example.loom.dev/v1alpha1", Kind: "MyResource", Name: "web", UID: "uid-1", Controller: &yes}, ns: "team-a"},
		{name: "core kind", in: "v1/ConfigMap/default/cfg/uid-2",
			want: &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg", UID: "uid-2", Controller: &yes}, ns: "default"},
		{name: "no uid", in: "v1/ConfigMap/default/cfg/"},
		{name: "no namespace", in: "v1/ConfigMap//cfg/uid"},
		{name: "too few parts", in: "ConfigMap/default/cfg/uid"},
		{name: "too many parts", in: "a/b/c/Kind/ns/name/uid"},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, ns, ok := ParseOwner(tt.in)
			if tt.want == nil {
				if ok {
					t.Fatalf("ParseOwner(%q) = %+v, %q, true; want false", tt.in, ref, ns)
				}
				return
			}
			if !ok {
				t.Fatalf("ParseOwner(%q) failed", tt.in)
			}
			if diff := cmp.Diff(*tt.want, ref); diff != "" || ns != tt.ns {
				t.Errorf("ParseOwner(%q): namespace %q (want %q), ref (-want +got):\n%s", tt.in, ns, tt.ns, diff)
			}
			if back := FormatOwner(ref, ns); back != tt.in {
				t.Errorf("FormatOwner(ParseOwner(%q)) = %q", tt.in, back)
			}
		})
	}
}

// TestOwnerOf checks that the controller ownerReference wins over the
// annotation, which counts only on an object without one.
func TestOwnerOf(t *testing.T) {
	yes := true
	withAnn := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o.SetAnnotations(map[string]string{AnnotationOwner: "example.loom.dev/v1alpha1/MyResource/team-a/web/uid-1"})
		return o
	}
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "r"}}}
	if ref, _ := OwnerOf(cr); ref != nil {
		t.Errorf("OwnerOf(no owner) = %+v, want nil", ref)
	}
	ref, ns := OwnerOf(withAnn(cr.DeepCopy()))
	if ref == nil || ref.UID != "uid-1" || ref.Name != "web" || ns != "team-a" {
		t.Errorf("OwnerOf(annotated) = %+v, %q; want MyResource team-a/web uid-1", ref, ns)
	}
	if ref, _ := OwnerOf(withAnn(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "team-a"}}})); ref != nil {
		t.Errorf("OwnerOf(a namespaced object with the annotation only) = %+v, want nil: an ownerReference can reach its parent", ref)
	}
	remote := func(ns string) *unstructured.Unstructured {
		o := withAnn(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": ns}}})
		ann := o.GetAnnotations()
		ann[AnnotationCluster] = "eu-1"
		o.SetAnnotations(ann)
		return o
	}
	if ref, ns := OwnerOf(remote("team-a")); ref == nil || ref.UID != "uid-1" || ns != "team-a" {
		t.Errorf("OwnerOf(a child placed in a workload cluster) = %+v, %q; want MyResource team-a/web uid-1", ref, ns)
	}
	if ref, _ := OwnerOf(remote("team-b")); ref != nil {
		t.Errorf("OwnerOf(a child placed in a workload cluster, naming a parent of another namespace) = %+v, want nil", ref)
	}
	cm := withAnn(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "team-b"}}})
	cm.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "uid-9", Controller: &yes}})
	ref, ns = OwnerOf(cm)
	if ref == nil || ref.UID != "uid-9" || ns != "team-b" {
		t.Errorf("OwnerOf(controller and annotation) = %+v, %q; want the controller, in the object's namespace", ref, ns)
	}
}

// TestControllerOfLooksUpTheAnnotationOnlyWhenNeeded checks that
// ControllerOf reads annotations only for an object without a controller
// reference: pack.Packed.Owner relies on it to scan its JSON only then.
// A namespaced one counts its owner annotation only when it is placed in
// a workload cluster, and only for an owner of its own namespace.
func TestControllerOfLooksUpTheAnnotationOnlyWhenNeeded(t *testing.T) {
	yes := true
	ref := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "d1", Controller: &yes}
	annotated := "example.loom.dev/v1alpha1/MyResource/team-a/web/p1"
	tests := []struct {
		name       string
		controller *metav1.OwnerReference
		namespace  string
		wantUID    string
		wantNS     string
		wantLookup bool
	}{
		{"a controller reference", ref, "team-b", "d1", "team-b", false},
		{"a cluster-scoped controller reference", ref, "", "d1", "", false},
		{"a namespaced object without one, the owner in another namespace", nil, "team-b", "", "", true},
		{"a namespaced object without one, the owner in its namespace", nil, "team-a", "p1", "team-a", true},
		{"a local namespaced object without one", nil, "team-a", "", "", true},
		{"a cluster-scoped object without one", nil, "", "p1", "team-a", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			looked := false
			got, ns := ControllerOf(tt.controller, tt.namespace, func(key string) (string, bool) {
				looked = true
				switch {
				case key == AnnotationCluster && tt.name != "a local namespaced object without one":
					return "eu-1", true
				case key == AnnotationCluster:
					return "", false
				case key != AnnotationOwner:
					t.Errorf("looked up %q, want %q", key, AnnotationOwner)
				}
				return annotated, true
			})
			var uid string
			if got != nil {
				uid = string(got.UID)
			}
			if uid != tt.wantUID || ns != tt.wantNS || looked != tt.wantLookup {
				t.Errorf("ControllerOf = uid %q, namespace %q, looked up the annotation %v; want %q, %q, %v", uid, ns, looked, tt.wantUID, tt.wantNS, tt.wantLookup)
			}
		})
	}
}
