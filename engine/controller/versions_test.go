package controller

// Unit tests of which version of its parent kind a controller reads, and
// which set changes replace it.

import (
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/render"
)

// versionedSet loads a set of kind Widget whose loom.yaml is head plus a
// v1alpha1 beside the hub, and a ConfigMap template.
func versionedSet(t *testing.T, head string) *render.Set {
	t.Helper()
	set, err := render.LoadFS(fstest.MapFS{
		"loom.yaml": {Data: []byte(head + "schema: {spec: {size: integer}}\nversions:\n- name: v1alpha1\n  schema: {spec: {size: integer}}\n")},
		"cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n")},
	}, "widget")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The controller watches the version the API server stores parents in,
// so that it never needs the conversion webhook to read them.
func TestControllerReadsTheStorageVersion(t *testing.T) {
	tests := []struct {
		name, head string
		want       schema.GroupVersionKind
	}{
		{"stored in the hub", "parent: {apiVersion: example.com/v1, kind: Widget}\n", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}},
		{"stored in another version", "parent: {apiVersion: example.com/v1, kind: Widget}\nstorageVersion: v1alpha1\n",
			schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "Widget"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := newParentController(nil, versionedSet(t, tt.head)).GVK(); got != tt.want {
				t.Errorf("the controller reads %v, want %v", got, tt.want)
			}
		})
	}
}

// A reload replaces the controller when its informer must watch another
// version (or a new schema), and only then.
func TestRestartFor(t *testing.T) {
	const (
		v1       = "parent: {apiVersion: example.com/v1, kind: Widget}\n"
		v2       = "parent: {apiVersion: example.com/v2, kind: Widget}\n"
		inAlpha  = v1 + "storageVersion: v1alpha1\n"
		inHubOne = v1 + "storageVersion: v1\n"
	)
	tests := []struct {
		name, old, cur string
		schema         bool
		want           string
	}{
		{"nothing that is watched changed", v1, inHubOne, false, ""},
		{"the hub changed", v1, v2, false, "its parent version"},
		{"the storage version changed", v1, inAlpha, false, "its parent's storage version"},
		{"the storage version changed back", inAlpha, v1, false, "its parent's storage version"},
		{"the schema changed", v1, v1, true, "its parent's schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := restartFor(versionedSet(t, tt.old), versionedSet(t, tt.cur), tt.schema); got != tt.want {
				t.Errorf("restartFor = %q, want %q", got, tt.want)
			}
		})
	}
}
