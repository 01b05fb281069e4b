package object

import (
	"crypto/sha256"
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// webAppSetID is the ApplySet ID of the App web in namespace default,
// computed outside Go: the unpadded URL-safe base64 of
//
//	printf web.default.App.example.com | sha256sum
const webAppSetID = "applyset-D_YSZBlQreU9VPuJq0a-dh4leAUnoO6H3Z0vC-CUzsk-v1"

// TestApplySetID checks the KEP-3659 format against IDs computed by hand.
func TestApplySetID(t *testing.T) {
	sum := sha256.Sum256([]byte("web.default.App.example.com"))
	byHand := "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
	tests := []struct {
		name                         string
		pname, ns, kind, group, want string
	}{
		{"computed in the test", "web", "default", "App", "example.com", byHand},
		{"computed outside Go", "web", "default", "App", "example.com", webAppSetID},
		{"the shipped golden files' parent", "web", "default", "MyResource", "example.loom.dev", "applyset-FSgPlITH87J3vpFkNgH2JrPYvqH5X4k9_84MvYmFRqg-v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ApplySetID(tt.pname, tt.ns, tt.kind, tt.group)); diff != "" {
				t.Errorf("ApplySetID mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if a, b := ApplySetID("web", "default", "App", "example.com"), ApplySetID("web", "other", "App", "example.com"); a == b {
		t.Errorf("parents in two namespaces share the ApplySet ID %s", a)
	}
}

// webApp is the App web in namespace default, with UID uid-1.
func webApp() *unstructured.Unstructured {
	p := &unstructured.Unstructured{}
	p.SetAPIVersion("example.com/v1")
	p.SetKind("App")
	p.SetNamespace("default")
	p.SetName("web")
	p.SetUID("uid-1")
	return p
}

// TestIsChildOf checks that an object is a child of a parent only with
// both marks: a controller reference to the parent's UID (an
// ownerReference, or AnnotationOwner on a cluster-scoped object) and the
// parent's ApplySet label; and that ChildSelector selects that label.
// render's TestIsChildOf checks the same against what Render injects.
func TestIsChildOf(t *testing.T) {
	parent := webApp()
	if diff := cmp.Diff(LabelPartOf+"="+webAppSetID, ChildSelector(parent)); diff != "" {
		t.Errorf("ChildSelector mismatch (-want +got):\n%s", diff)
	}
	yes := true
	ref := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "App", Name: "web", UID: "uid-1", Controller: &yes}
	child := func(namespace string, refs []metav1.OwnerReference, annotations, labels map[string]string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("v1")
		o.SetKind("ConfigMap")
		o.SetName("cm")
		o.SetNamespace(namespace)
		o.SetOwnerReferences(refs)
		o.SetAnnotations(annotations)
		o.SetLabels(labels)
		return o
	}
	ours := map[string]string{LabelPartOf: webAppSetID}
	notController := ref
	notController.Controller = nil
	otherUID := ref
	otherUID.UID = "uid-2"
	annotated := map[string]string{AnnotationOwner: FormatOwner(ref, "default")}
	renamed := webApp()
	renamed.SetName("other")
	tests := []struct {
		name   string
		obj    *unstructured.Unstructured
		parent *unstructured.Unstructured
		want   bool
	}{
		{"ownerReference and label", child("default", []metav1.OwnerReference{ref}, nil, ours), parent, true},
		{"cluster-scoped, loom.dev/owner and label", child("", nil, annotated, ours), parent, true},
		{"loom.dev/owner on a namespaced object", child("default", nil, annotated, ours), parent, false},
		{"no label", child("default", []metav1.OwnerReference{ref}, nil, nil), parent, false},
		{"another ApplySet's label", child("default", []metav1.OwnerReference{ref}, nil, map[string]string{LabelPartOf: "applyset-someone-else-v1"}), parent, false},
		{"ownerReference not as controller", child("default", []metav1.OwnerReference{notController}, nil, ours), parent, false},
		{"controller of another UID", child("default", []metav1.OwnerReference{otherUID}, nil, ours), parent, false},
		{"another parent's name", child("default", []metav1.OwnerReference{ref}, nil, ours), renamed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsChildOf(tt.obj, tt.parent); got != tt.want {
				t.Errorf("IsChildOf = %v, want %v", got, tt.want)
			}
		})
	}
}
