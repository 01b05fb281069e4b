package chart

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"
)

// BenchmarkRender renders a chart whose output is never kept (each
// render is a new revision): the app chart, and a chart whose time goes
// into tight loops, whose every turn is a deadline check, with no
// deadline and with one.
func BenchmarkRender(b *testing.B) {
	loops := fstest.MapFS{
		"loops/Chart.yaml":  {Data: []byte("apiVersion: v2\nname: loops\nversion: 0.1.0\n")},
		"loops/values.yaml": {Data: []byte("n: 300\n")},
		"loops/templates/_helpers.tpl": {Data: []byte(
			"{{ define \"row\" }}{{ range $i := until (int .) }}{{ if eq (mod $i 10) 0 }}{{ $i }}{{ end }}{{ end }}{{ end }}\n")},
		"loops/templates/cm.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n" +
			"{{- range $i := until 100 }}\n  k{{ $i }}: {{ include \"row\" 100 | quote }}{{ end }}\n" +
			"  t: {{ tpl \"{{ range until 50 }}{{ end }}x\" . | quote }}\n")},
	}
	rev := 0 // every render a revision of its own, never kept before
	app := filepath.Join("testdata", "charts", "app")
	for _, tc := range []struct {
		name string
		load func() (*Chart, error)
	}{
		{"app", func() (*Chart, error) {
			c, _, err := Load(os.DirFS(filepath.Dir(app)), filepath.Base(app), Options{})
			return c, err
		}},
		{"loops", func() (*Chart, error) { c, _, err := Load(loops, "loops", Options{}); return c, err }},
	} {
		c, err := tc.load()
		if err != nil {
			b.Fatal(err)
		}
		for _, deadline := range []bool{false, true} {
			name := tc.name
			if deadline {
				name += "/deadline"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				if deadline {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Hour)
					defer cancel()
				}
				b.ReportAllocs()
				for range b.N {
					rev++
					env := Env{Release: Release{Name: "r", Namespace: "ns", Revision: rev, IsInstall: true}}
					res, err := c.RenderContext(ctx, map[string]any{}, env)
					if err != nil {
						b.Fatal(err)
					}
					if tc.name == "loops" && len(res.Files[0].Text) < 100*10*2 {
						b.Fatalf("the loops rendered %q", res.Files[0].Text)
					}
				}
			})
		}
	}
}
