package render

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// NOTES.txt reaches the parent's status only when loom.yaml asks for it
// (notes: true): charts print generated passwords there, and whoever may
// read the parent may read its status.
func TestChartNotesOptIn(t *testing.T) {
	for _, tt := range []struct {
		name, extra string
		want        bool
	}{
		{name: "by default, none", want: false},
		{name: "notes: false", extra: "notes: false\n", want: false},
		{name: "notes: true", extra: "notes: true\n", want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			loomYAML, err := os.ReadFile(webChartSet + "/loom.yaml")
			if err != nil {
				t.Fatal(err)
			}
			fsys := fstest.MapFS{"loom.yaml": {Data: append(loomYAML, tt.extra...)}}
			err = fs.WalkDir(os.DirFS(webChartSet+"/chart"), ".", func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(webChartSet + "/chart/" + p)
				fsys["chart/"+p] = &fstest.MapFile{Data: b}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			set, err := LoadFS(fsys, "web")
			if err != nil {
				t.Fatal(err)
			}
			out, err := set.RenderWith(webApp("shop", "team-a", 1, map[string]any{}), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out.Notes, "web is installed as shop in team-a."); got != tt.want {
				t.Errorf("notes rendered: %v, want %v (%q)", got, tt.want, out.Notes)
			}
		})
	}
}
