package render

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/render/convert"
)

// versionedConfig serves v1 (the hub: replicas) and v2 (count), converted
// by templates.
const versionedConfig = `parent:
  apiVersion: example.com/v1
  kind: App
schema:
  spec: {replicas: integer, image: string}
versions:
- name: v2
  schema:
    spec: {count: integer, image: string}
  conversion:
    toHub: conv/up.yaml
    fromHub: conv/down.yaml
`

// versionedSet is a set of versionedConfig whose templates are up and down.
func versionedSet(up, down string) map[string]string {
	return map[string]string{
		"loom.yaml":      versionedConfig,
		"cm.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n",
		"_helpers.tpl":   `{{ define "image" }}image: {{ .Spec.image | quote }}{{ end }}`,
		"conv/up.yaml":   up,
		"conv/down.yaml": down,
	}
}

const (
	goodUp   = "{{ with .Spec.count }}replicas: {{ . }}{{ end }}\n{{ include \"image\" . }}\n"
	goodDown = "{{ with .Spec.replicas }}count: {{ . }}{{ end }}\n{{ include \"image\" . }}\n"
)

func TestSetConverter(t *testing.T) {
	s := loadSet(t, versionedSet(goodUp, goodDown))
	c := s.Converter()
	if c == nil {
		t.Fatal("Converter() = nil for a set of two versions")
	}
	if diff := cmp.Diff([]string{"cm.yaml"}, s.Files()); diff != "" {
		t.Errorf("Files(): conversion templates are no children's (-want +got):\n%s", diff)
	}
	if _, ok := s.ChildTexts()["conv/up.yaml"]; ok {
		t.Error("ChildTexts() holds a conversion template")
	}
	v2 := fixture(t, "apiVersion: example.com/v2\nkind: App\nmetadata: {name: web, namespace: default}\nspec: {count: 3, image: nginx}\n")
	hub, err := c.Convert(v2, "v1")
	if err != nil {
		t.Fatalf("Convert() = %v", err)
	}
	want := fixture(t, "apiVersion: example.com/v1\nkind: App\nmetadata: {name: web, namespace: default}\nspec: {replicas: 3, image: nginx}\n")
	if diff := cmp.Diff(want.Object, hub.Object); diff != "" {
		t.Errorf("Convert (-want +got):\n%s", diff)
	}
	if err := c.RoundTrip(v2); err != nil {
		t.Errorf("RoundTrip() = %v", err)
	}
	if one := loadSet(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"}); one.Converter() != nil {
		t.Error("Converter() != nil for a set of one version")
	}
}

func TestSetConverterErrors(t *testing.T) {
	hub := "apiVersion: example.com/v1\nkind: App\nmetadata: {name: web, namespace: default}\nspec: {replicas: 3, image: nginx}\n"
	tests := []struct {
		name      string
		files     map[string]string
		loadErr   string
		convErr   string
		deadline  bool
		notLookup bool
	}{
		{name: "a bug in a template", files: versionedSet(goodUp, "count: 1\n{{ fail \"no count\" }}\n"),
			convErr: "conv/down.yaml:2: "},
		{name: "a parse error", files: versionedSet("{{ .Spec.count \n", goodDown),
			loadErr: "conv/up.yaml:1: "},
		{name: "a missing template", files: func() map[string]string {
			f := versionedSet(goodUp, goodDown)
			delete(f, "conv/down.yaml")
			return f
		}(), loadErr: "loom.yaml:12: conversion template: open conv/down.yaml"},
		{name: "a template that is not hermetic", files: versionedSet(goodUp, "count: {{ randInt 1 5 }}\n"),
			loadErr: "conv/down.yaml:1: "},
		{name: "invalid YAML", files: versionedSet(goodUp, "count: [\n"),
			convErr: "conv/down.yaml:1 (document 1): invalid YAML"},
		{name: "a loop that never ends", files: versionedSet(goodUp, "{{ range $i := until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}\n"),
			convErr: "conv/down.yaml:1: ", deadline: true},
		{name: "a lookup", files: versionedSet(goodUp, "{{ $x := lookup \"v1\" \"ConfigMap\" \"default\" \"a\" }}count: 1\n"),
			convErr: "a conversion template cannot look up objects", notLookup: true},
		{name: "a broken move", files: map[string]string{
			"loom.yaml": "parent: {apiVersion: example.com/v1, kind: App}\nschema: {spec: {replicas: integer}}\nversions:\n- name: v2\n  schema: {spec: {count: integer}}\n  conversion:\n    moves:\n    - rename: {from: spec.count, to: spec.size}\n",
			"cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		}, loadErr: `loom.yaml:8: versions[0].conversion.moves[0].rename.to "spec.size": the schema of v1 has no such field`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadFS(fsOf(tt.files), "testset")
			if tt.loadErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.loadErr) {
					t.Fatalf("LoadFS() = %v, want an error containing %q", err, tt.loadErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadFS() = %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), convert.Timeout)
			if tt.deadline { // stop the loop sooner than Convert would
				ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			}
			defer cancel()
			_, err = s.Converter().ConvertContext(ctx, fixture(t, hub), "v2")
			if err == nil || !strings.Contains(err.Error(), tt.convErr) {
				t.Fatalf("Convert() = %v, want an error containing %q", err, tt.convErr)
			}
			if tt.deadline && (!errors.Is(err, ErrDeadline) || !errors.Is(err, context.DeadlineExceeded)) {
				t.Errorf("Convert() = %v, want ErrDeadline and the context's error", err)
			}
			if tt.notLookup && !errors.Is(err, ErrRender) {
				t.Errorf("Convert() = %v, want a render error", err)
			}
		})
	}
}

// The converter is shared by every request the webhook serves: template
// conversions run concurrently, each on a renderer of its own (go test
// -race checks it).
func TestSetConverterConcurrent(t *testing.T) {
	c := loadSet(t, versionedSet(goodUp, goodDown)).Converter()
	v2 := fixture(t, "apiVersion: example.com/v2\nkind: App\nmetadata: {name: web, namespace: default}\nspec: {count: 3, image: nginx}\n")
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for range 50 {
				var hub *unstructured.Unstructured
				if hub, err = c.Convert(v2, "v1"); err != nil {
					break
				}
				if hub.Object["spec"].(map[string]any)["replicas"] != int64(3) {
					err = fmt.Errorf("spec = %v, want replicas 3", hub.Object["spec"])
					break
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
