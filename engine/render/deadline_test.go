package render

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A render that does not end stops at its context's deadline, with the
// file and line of the loop that was running, whatever form the loop
// takes: none of these calls a function or writes a byte on each turn of
// the inner loop.
func TestRenderStopsAtDeadline(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	for _, tc := range []struct {
		name     string
		files    map[string]string
		wantFile string
		wantLine int
	}{
		{
			name:     "nested until",
			files:    map[string]string{"cm.yaml": cm + "{{ range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}\n"},
			wantFile: "cm.yaml", wantLine: 5,
		},
		{
			name:     "range over integers",
			files:    map[string]string{"cm.yaml": cm + "# a comment\n{{ range 1000000 }}\n{{- range 1000000 }}{{ end }}{{ end }}\n"},
			wantFile: "cm.yaml", wantLine: 7,
		},
		{
			name:     "range over a list built once",
			files:    map[string]string{"cm.yaml": cm + "{{- $l := until 1000000 }}\n{{- range $l }}{{ range $l }}{{ end }}{{ end }}\n"},
			wantFile: "cm.yaml", wantLine: 6,
		},
		{
			name: "a define that calls itself twice",
			files: map[string]string{
				// 60 deep, so that text/template's depth cap (100 000) never
				// ends it before the deadline, and 2^60 calls wide.
				"_helpers.tpl": "{{ define \"twice\" }}{{ if lt (len .) 60 }}\n{{- template \"twice\" (append . 1) }}{{ template \"twice\" (append . 1) }}\n{{- end }}{{ end }}\n",
				"cm.yaml":      cm + "{{ template \"twice\" list }}\n",
			},
			wantFile: "_helpers.tpl", wantLine: 1,
		},
		{
			name: "a loop in an include",
			files: map[string]string{
				"_helpers.tpl": "{{ define \"loop\" }}\n{{- range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}\n{{- end }}\n",
				"cm.yaml":      cm + "data:\n  a: {{ include \"loop\" . | quote }}\n",
			},
			wantFile: "_helpers.tpl", wantLine: 2,
		},
		{
			name:     "a loop in tpl text",
			files:    map[string]string{"cm.yaml": cm + "data:\n  a: {{ tpl .Spec.text . | quote }}\n"},
			wantFile: "cm.yaml", wantLine: 6,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := loadSet(t, tc.files)
			parent := app(t, "  text: '{{ range 1000000 }}{{ range 1000000 }}{{ end }}{{ end }}'\n")
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := s.RenderContext(ctx, parent, nil)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the render took %s after a 100ms deadline", took)
			}
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if diff := cmp.Diff([]any{tc.wantFile, tc.wantLine}, []any{re.File, re.Line}); diff != "" {
				t.Errorf("location (-want +got):\n%s\nerr: %v", diff, err)
			}
			for _, target := range []error{ErrDeadline, context.DeadlineExceeded, ErrRender} {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(err, %v) = false; err: %v", target, err)
				}
			}
			if strings.Contains(err.Error(), "error calling") {
				t.Errorf("message names the injected check: %v", err)
			}
		})
	}
}

// The checks cost nothing a template can see: a set with loops renders the
// same with and without a deadline, and a template may still declare and
// use its own variables inside a range.
func TestDeadlineChecksAreInvisible(t *testing.T) {
	s := loadSet(t, map[string]string{
		"_helpers.tpl": "{{ define \"n\" }}{{ range $i, $e := . }}{{ $i }}{{ $e }}{{ end }}{{ end }}\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n" +
			"{{- range $k, $v := .Spec.data }}\n  {{ $k }}: {{ $v | quote }}{{ else }}\n  none: x{{ end }}\n" +
			"  inc: {{ include \"n\" (list \"a\" \"b\") | quote }}\n" +
			"  loop: '{{ range 3 }}{{ . }}{{ break }}{{ end }}'\n",
	})
	parent := app(t, "  data:\n    a: \"1\"\n    b: \"2\"\n")
	plain, err := s.Render(parent)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := s.RenderContext(ctx, parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": "1", "b": "2", "inc": "0a1b", "loop": "0"}
	for _, got := range [][]any{{plain[0].Object["data"]}, {out.Children[0].Object["data"]}} {
		if diff := cmp.Diff(want, got[0]); diff != "" {
			t.Errorf("data (-want +got):\n%s", diff)
		}
	}
}

// A context that has already ended renders nothing.
func TestRenderContextEnded(t *testing.T) {
	s := loadSet(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.RenderContext(ctx, app(t, ""), nil)
	if !errors.Is(err, ErrDeadline) || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want ErrDeadline and context.Canceled", err)
	}
}

// A status template that loops for ever stops at the deadline too.
func TestRenderStatusStopsAtDeadline(t *testing.T) {
	s := loadSet(t, map[string]string{
		"loom.yaml":  testConfig + "status: status.tpl\n",
		"cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"status.tpl": "ready: true\n{{ range 1000000 }}{{ range 1000000 }}{{ end }}{{ end }}\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, _, err := s.RenderStatusWith(ctx, app(t, ""), nil, nil)
	var re *Error
	if !errors.As(err, &re) || !errors.Is(err, ErrDeadline) {
		t.Fatalf("err = %v, want an *Error that is ErrDeadline", err)
	}
	if re.File != "status.tpl" || re.Line != 2 {
		t.Errorf("located at %s:%d, want status.tpl:2", re.File, re.Line)
	}
}
