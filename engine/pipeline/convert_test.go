package pipeline

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// renameConverter converts between v1alpha1 (spec.size) and v1
// (spec.replicas), as a set's rename move would; it fails on a parent
// whose spec.size is "bad", the way a conversion template with a bug
// does, naming its file and line.
type renameConverter struct{}

func (renameConverter) Convert(obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	from, into := "size", "replicas"
	if to == "v1alpha1" {
		from, into = into, from
	}
	spec, _ := out.Object["spec"].(map[string]any)
	if spec[from] == "bad" {
		return nil, errors.New("loom.yaml:12: spec.size: not a number")
	}
	if v, ok := spec[from]; ok {
		delete(spec, from)
		spec[into] = v
	}
	out.SetAPIVersion("example.com/" + to)
	return out, nil
}

func TestToVersion(t *testing.T) {
	parent := func(version string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/" + version, "kind": "App",
			"metadata": map[string]any{"name": "web", "namespace": "default"},
			"spec":     spec,
		}}
	}
	tests := []struct {
		name    string
		conv    Converter
		in      *unstructured.Unstructured
		to      string
		want    *unstructured.Unstructured
		wantErr string
	}{
		{name: "already in the version, with no converter", in: parent("v1", map[string]any{"replicas": int64(2)}), to: "v1",
			want: parent("v1", map[string]any{"replicas": int64(2)})},
		{name: "converted", conv: renameConverter{}, in: parent("v1alpha1", map[string]any{"size": int64(2)}), to: "v1",
			want: parent("v1", map[string]any{"replicas": int64(2)})},
		{name: "converted back", conv: renameConverter{}, in: parent("v1", map[string]any{"replicas": int64(2)}), to: "v1alpha1",
			want: parent("v1alpha1", map[string]any{"size": int64(2)})},
		{name: "the converter fails", conv: renameConverter{}, in: parent("v1alpha1", map[string]any{"size": "bad"}), to: "v1",
			wantErr: "convert App default/web from v1alpha1 to v1: loom.yaml:12: spec.size: not a number"},
		{name: "no converter", in: parent("v1alpha1", map[string]any{"size": int64(2)}), to: "v1",
			wantErr: "convert App default/web from v1alpha1 to v1: the set has no conversion between its versions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.DeepCopy()
			got, err := ToVersion(tt.conv, tt.in, tt.to)
			if diff := cmp.Diff(before.Object, tt.in.Object); diff != "" {
				t.Errorf("the parent was changed (-before +after):\n%s", diff)
			}
			if tt.wantErr != "" {
				var ce *ConversionError
				if err == nil || err.Error() != tt.wantErr || !errors.As(err, &ce) {
					t.Fatalf("error = %v, want a *ConversionError %q", err, tt.wantErr)
				}
				if r, ok := errors.AsType[status.Reasoned](err); !ok || r.Reason() != status.ReasonConversionFailed {
					t.Errorf("the error gives no Degraded reason %s", status.ReasonConversionFailed)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want.Object, got.Object); diff != "" {
				t.Errorf("converted (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStorageGVK(t *testing.T) {
	hub := loomYAML + "schema: {spec: {replicas: integer}}\n"
	tests := []struct {
		name, loomYAML string
		want           schema.GroupVersionKind
	}{
		{"one version", loomYAML, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "App"}},
		{"stored in the hub", hub + "versions:\n- name: v1alpha1\n  schema: {spec: {size: integer}}\n",
			schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "App"}},
		{"stored in another version", hub + "storageVersion: v1alpha1\nversions:\n- name: v1alpha1\n  schema: {spec: {size: integer}}\n",
			schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "App"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := render.LoadFS(fstest.MapFS{config.File: {Data: []byte(tt.loomYAML)}, "web.yaml": {Data: []byte(deployment)}}, "app")
			if err != nil {
				t.Fatal(err)
			}
			if got := StorageGVK(set); got != tt.want {
				t.Errorf("StorageGVK = %v, want %v", got, tt.want)
			}
			if ConverterOf(set) != nil && !strings.Contains(tt.loomYAML, "versions:") {
				t.Error("a set with one version has a converter")
			}
		})
	}
}

// A set with several versions hands the controller its own converter, and
// the controller's conversion of a stored parent to the hub is that
// converter's: v1alpha1's size becomes the hub's replicas.
func TestConverterOfASetWithVersions(t *testing.T) {
	src := loomYAML + "schema: {spec: {replicas: integer}}\nstorageVersion: v1alpha1\nversions:\n- name: v1alpha1\n  schema: {spec: {size: integer}}\n  conversion: {moves: [{rename: {from: spec.size, to: spec.replicas}}]}\n"
	set, err := render.LoadFS(fstest.MapFS{config.File: {Data: []byte(src)}, "web.yaml": {Data: []byte(deployment)}}, "app")
	if err != nil {
		t.Fatal(err)
	}
	conv := ConverterOf(set)
	if conv == nil {
		t.Fatal("ConverterOf = nil for a set with two versions")
	}
	stored := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1alpha1", "kind": "App",
		"metadata": map[string]any{"name": "a", "namespace": "ns"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	hub, err := ToVersion(conv, stored, set.Config.HubVersion())
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedInt64(hub.Object, "spec", "replicas"); got != 3 || hub.GetAPIVersion() != "example.com/v1" {
		t.Errorf("hub = %v, want example.com/v1 with spec.replicas 3", hub.Object)
	}
}
