package render

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// chartSetWith is a chart set (chart in mychart, named thing) with the
// given files under mychart/templates.
func chartSetWith(templates map[string]string) map[string]string {
	files := map[string]string{
		"loom.yaml":           "parent:\n  apiVersion: example.com/v1\n  kind: App\nchart: mychart\n",
		"mychart/Chart.yaml":  "apiVersion: v2\nname: thing\nversion: 0.1.0\n",
		"mychart/values.yaml": "text: ''\n",
	}
	for name, text := range templates {
		files["mychart/templates/"+name] = text
	}
	return files
}

// A chart set's render that does not end stops at its context's
// deadline too, with the file (by its path in the set) and line of the
// loop that was running, whatever form the loop takes (see
// TestRenderStopsAtDeadline). A render stopped by its deadline is not
// kept: the same parent renders again, and stops again, under a later
// deadline.
func TestChartRenderStopsAtDeadline(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	const dir = "mychart/templates/"
	for _, tc := range []struct {
		name     string
		files    map[string]string
		wantFile string
		wantLine int
	}{
		{
			name:     "nested until",
			files:    map[string]string{"cm.yaml": cm + "{{ range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}\n"},
			wantFile: dir + "cm.yaml", wantLine: 5,
		},
		{
			name:     "range over integers",
			files:    map[string]string{"cm.yaml": cm + "# a comment\n{{ range 1000000 }}\n{{- range 1000000 }}{{ end }}{{ end }}\n"},
			wantFile: dir + "cm.yaml", wantLine: 7,
		},
		{
			name:     "range over a list built once",
			files:    map[string]string{"cm.yaml": cm + "{{- $l := until 1000000 }}\n{{- range $l }}{{ range $l }}{{ end }}{{ end }}\n"},
			wantFile: dir + "cm.yaml", wantLine: 6,
		},
		{
			name: "a define that calls itself twice",
			files: map[string]string{
				"_helpers.tpl": "{{ define \"twice\" }}{{ if lt (len .) 60 }}\n{{- template \"twice\" (append . 1) }}{{ template \"twice\" (append . 1) }}\n{{- end }}{{ end }}\n",
				"cm.yaml":      cm + "{{ template \"twice\" list }}\n",
			},
			wantFile: dir + "_helpers.tpl", wantLine: 1,
		},
		{
			name: "a loop in an include",
			files: map[string]string{
				"_helpers.tpl": "{{ define \"loop\" }}\n{{- range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}\n{{- end }}\n",
				"cm.yaml":      cm + "data:\n  a: {{ include \"loop\" . | quote }}\n",
			},
			wantFile: dir + "_helpers.tpl", wantLine: 2,
		},
		{
			name:     "a loop in tpl text",
			files:    map[string]string{"cm.yaml": cm + "data:\n  a: {{ tpl .Values.text . | quote }}\n"},
			wantFile: dir + "cm.yaml", wantLine: 6,
		},
		{
			name:     "a loop in tpl text that defines a template",
			files:    map[string]string{"cm.yaml": cm + "data:\n  a: {{ tpl (print \"{{ define `x` }}{{ end }}\" .Values.text) . | quote }}\n"},
			wantFile: dir + "cm.yaml", wantLine: 6,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := loadSet(t, chartSetWith(tc.files))
			parent := app(t, "  text: '{{ range 1000000 }}{{ range 1000000 }}{{ end }}{{ end }}'\n")
			for i := range 2 {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				start := time.Now()
				done := make(chan error, 1)
				go func() {
					_, err := s.RenderContext(ctx, parent, nil)
					done <- err
				}()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					cancel()
					t.Fatalf("render %d: still running 10s after a 100ms deadline", i)
				}
				cancel()
				if took := time.Since(start); took > 5*time.Second {
					t.Errorf("render %d took %s after a 100ms deadline", i, took)
				}
				var re *Error
				if !errors.As(err, &re) {
					t.Fatalf("render %d: err = %v, want an *Error", i, err)
				}
				if diff := cmp.Diff([]any{tc.wantFile, tc.wantLine}, []any{re.File, re.Line}); diff != "" {
					t.Errorf("render %d: location (-want +got):\n%s\nerr: %v", i, diff, err)
				}
				for _, target := range []error{ErrDeadline, context.DeadlineExceeded, ErrRender} {
					if !errors.Is(err, target) {
						t.Errorf("render %d: errors.Is(err, %v) = false; err: %v", i, target, err)
					}
				}
				if msg := err.Error(); strings.Contains(msg, "error calling") || strings.Contains(msg, "thing/templates") {
					t.Errorf("render %d: message names the injected check or Helm's path: %v", i, err)
				}
			}
		})
	}
}

// The checks change nothing a chart's templates write, and a render that
// ends in time is kept as before.
func TestChartDeadlineChecksAreInvisible(t *testing.T) {
	s := loadSet(t, chartSetWith(map[string]string{
		"_helpers.tpl": "{{ define \"n\" }}{{ range $i, $e := . }}{{ $i }}{{ $e }}{{ end }}{{ end }}\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n" +
			"{{- range $k, $v := .Values.data }}\n  {{ $k }}: {{ $v | quote }}{{ else }}\n  none: x{{ end }}\n" +
			"  inc: {{ include \"n\" (list \"a\" \"b\") | quote }}\n" +
			"  tpl: {{ tpl \"{{ range 2 }}{{ . }}{{ end }}\" . | quote }}\n" +
			"  loop: '{{ range 3 }}{{ . }}{{ break }}{{ end }}'\n",
	}))
	parent := app(t, "  data:\n    a: \"1\"\n    b: \"2\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want := map[string]any{"a": "1", "b": "2", "inc": "0a1b", "tpl": "01", "loop": "0"}
	for i := range 2 {
		out, err := s.RenderContext(ctx, parent, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, out.Children[0].Object["data"]); diff != "" {
			t.Errorf("render %d: data (-want +got):\n%s", i, diff)
		}
	}
}
