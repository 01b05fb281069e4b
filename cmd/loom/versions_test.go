package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// `loom render -f` of a parent in each version the shipped set serves, and
// in one it does not serve.
func TestRenderVersions(t *testing.T) {
	set := filepath.Join(repoRoot, "templates", "myresource")
	hub, err := execute(t, "", "render", "-t", set, "-f", filepath.Join(set, "tests", "full.yaml"))
	if err != nil {
		t.Fatalf("render full.yaml: %v\n%s", err, hub)
	}
	tests := []struct{ name, parent, want, err string }{
		{name: "v1 renders as v1alpha1", parent: "apiVersion: example.loom.dev/v1\nkind: MyResource\nmetadata: {name: web, labels: {team: storefront}}\n" +
			"spec: {image: {repository: nginx, tag: '1.27'}, replicas: 3, resources: {memory: 128Mi}, port: 8080, config: {LOG_LEVEL: info, GREETING: hello from loom}}\n", want: hub},
		{name: "v1alpha1", parent: "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata: {name: web, labels: {team: storefront}}\n" +
			"spec: {image: 'nginx:1.27', replicas: 3, memory: 128Mi, port: 8080, config: {LOG_LEVEL: info, GREETING: hello from loom}}\n", want: hub},
		{name: "a version not served", parent: "apiVersion: example.loom.dev/v2\nkind: MyResource\nmetadata: {name: web}\nspec: {}\n",
			err: "stdin: object 1 is a example.loom.dev/v2 MyResource (web), in a version this set does not serve: it serves v1alpha1, v1 (loom.yaml)"},
		{name: "v1 refused by v1's schema after conversion", parent: "apiVersion: example.loom.dev/v1\nkind: MyResource\nmetadata: {name: web}\nspec: {replicas: 2}\n",
			err: `spec.image: Required value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := execute(t, tt.parent, "render", "-t", set, "-f", "-")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("render = %v, want an error containing %q\n%s", err, tt.err, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v\n%s", err, got)
			}
			if got != tt.want {
				t.Errorf("render printed other children than full.yaml's:\n%s", got)
			}
		})
	}
}

// `loom test` round-trips each case through every version: a conversion
// that drops a field the other version holds fails the case.
func TestTestRoundTrips(t *testing.T) {
	dir := copySet(t)
	got, err := execute(t, "", "test", dir)
	if err != nil || !strings.Contains(got, "ok   "+dir+"/full-v1\n") || !strings.Contains(got, "7 passed, 0 failed") {
		t.Fatalf("loom test of the shipped set: %v\n%s", err, got)
	}
	path := filepath.Join(dir, "loom.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// v1 converted by templates whose way down forgets spec.replicas,
	// which v1 holds.
	moves := regexp.MustCompile(`(?s)    conversion:\n      moves:\n.*?\n# status.yaml`)
	if !moves.Match(raw) {
		t.Fatal("the shipped loom.yaml has no v1 moves to replace")
	}
	raw = moves.ReplaceAllLiteral(raw, []byte("    conversion: {toHub: up.tmpl, fromHub: down.tmpl}\n# status.yaml"))
	files := map[string]string{
		"loom.yaml": string(raw),
		"up.tmpl": `image: {{ printf "%s:%s" .Spec.image.repository .Spec.image.tag | quote }}
{{- with .Spec.replicas }}
replicas: {{ . }}{{ end }}
`,
		"down.tmpl": `image: {repository: {{ .Spec.image | quote }}}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err = execute(t, "", "test", dir)
	want := "FAIL " + dir + "/replicas-zero: round trip of MyResource paused: v1alpha1 → v1 → v1alpha1: the conversion loses spec.port, spec.replicas, which v1 can hold"
	if err == nil || !strings.Contains(got, want) {
		t.Fatalf("loom test = %v, want a case failing its round trip (%s...)\n%s", err, want, got)
	}
}
