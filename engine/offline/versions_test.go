package offline

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/render"
)

// lossyUp and lossyDown convert the shipped set's v1 by templates, and
// the way down forgets spec.replicas, which v1 holds.
const (
	lossyUp = `image: {{ .Spec.image.repository | quote }}{{ with .Spec.image.tag }}{{ printf ":%s" . | quote }}{{ end }}
{{- if hasKey .Spec "replicas" }}
replicas: {{ .Spec.replicas }}{{ end }}
{{- with .Spec.port }}
port: {{ . }}{{ end }}
{{- with .Spec.config }}
config: {{ toJson . }}{{ end }}
`
	lossyDown = `image: {repository: {{ .Spec.image | quote }}}
{{- with .Spec.port }}
port: {{ . }}{{ end }}
{{- with .Spec.config }}
config: {{ toJson . }}{{ end }}
`
)

// withConversion rewrites the v1 conversion of the copied shipped set's
// loom.yaml as text (conversion: ...) and loads the set again.
func withConversion(t *testing.T, set *render.Set, conversion string, files map[string]string) *render.Set {
	t.Helper()
	path := filepath.Join(set.Dir, config.File)
	moves := regexp.MustCompile(`(?s)    conversion:\n      moves:\n.*?\n# status.yaml`)
	text := readFile(t, path)
	if !moves.MatchString(text) {
		t.Fatal("the shipped loom.yaml has no v1 moves to replace")
	}
	writeFile(t, path, moves.ReplaceAllLiteralString(text, conversion+"\n# status.yaml"))
	for name, body := range files {
		writeFile(t, filepath.Join(set.Dir, name), body)
	}
	out, err := render.Load(set.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A case whose trip through another version loses a field that version
// holds fails, naming the parent, the trip and the field (full and
// no-config set replicas); a case with nothing to lose passes.
func TestRunRoundTripLoss(t *testing.T) {
	set := withConversion(t, copySet(t), "    conversion: {toHub: up.tmpl, fromHub: down.tmpl}",
		map[string]string{"up.tmpl": lossyUp, "down.tmpl": lossyDown})
	results := run(t, set, false)
	const want = "round trip of MyResource web: v1alpha1 → v1 → v1alpha1: the conversion loses spec.replicas, which v1 can hold (only loom.dev/conversion-data keeps them): a conversion to v1 should carry them"
	for _, name := range []string{"full", "no-config"} {
		if r := results[name]; r.Err == nil || r.Err.Error() != want {
			t.Errorf("case %s: Err = %v, want %q", name, r.Err, want)
		}
	}
	if r := results["minimal"]; r.Failed() {
		t.Errorf("case minimal (no replicas to lose): Err = %v, Diff:\n%s", r.Err, r.Diff)
	}
}

// A parent in v1 renders what the same parent in v1alpha1 renders.
func TestRenderFileInAnotherVersion(t *testing.T) {
	set := copySet(t)
	tests := filepath.Join(set.Dir, render.TestsDir)
	for _, pair := range [][2]string{{"full", "full-v1"}, {"minimal", "minimal-v1"}} {
		hub, err := RenderFile(set, filepath.Join(tests, pair[0]+".yaml"), DefaultNamespace)
		if err != nil {
			t.Fatal(err)
		}
		v1, err := RenderFile(set, filepath.Join(tests, pair[1]+".yaml"), DefaultNamespace)
		if err != nil {
			t.Fatal(err)
		}
		if pair[0] == "minimal" { // minimal-v1's image has a registry's port
			hub = []byte(strings.ReplaceAll(string(hub), "nginx:1.27", "registry.example.com:5000/hello"))
		}
		if string(hub) != string(v1) {
			t.Errorf("%s renders other children than %s:\n%s\n---\n%s", pair[1], pair[0], v1, hub)
		}
	}
}

func TestCheckParentsVersions(t *testing.T) {
	set := copySet(t)
	tests := []struct{ name, doc, err string }{
		{name: "the hub", doc: "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata: {name: a}\n"},
		{name: "another served version", doc: "apiVersion: example.loom.dev/v1\nkind: MyResource\nmetadata: {name: a}\n"},
		{name: "a version not served", doc: "apiVersion: example.loom.dev/v2\nkind: MyResource\nmetadata: {name: a}\n",
			err: "p.yaml: object 1 is a example.loom.dev/v2 MyResource (a), in a version this set does not serve: it serves v1alpha1, v1 (loom.yaml)"},
		{name: "another group", doc: "apiVersion: other.dev/v1\nkind: MyResource\nmetadata: {name: a}\n",
			err: "not a parent of this set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.yaml")
			if err := os.WriteFile(path, []byte(tt.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			objs, err := readObjects(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = CheckParents(set, "p.yaml", objs)
			if (err != nil) != (tt.err != "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("CheckParents() = %v, want an error containing %q", err, tt.err)
			}
		})
	}
}
