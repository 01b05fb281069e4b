package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every relative link in README.md and docs/**/*.md names a file that
// exists, and each #fragment a heading of the file it names.
func TestLinksResolve(t *testing.T) {
	files := []string{filepath.Join("..", "README.md")}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files, want the README and the docs", len(files))
	}
	for _, f := range files {
		bad, err := Check(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range bad {
			t.Error(e)
		}
	}
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"How it works", "how-it-works"},
		{"Many replicas: `loom run --sharded`", "many-replicas-loom-run---sharded"},
		{"The parent's API: `schema:` in loom.yaml", "the-parents-api-schema-in-loomyaml"},
		{"`loom run --install-crds`: Loom installs what it generates", "loom-run---install-crds-loom-installs-what-it-generates"},
		{"Runbook: LoomAbsent", "runbook-loomabsent"},
		{"Render (`bench/`, its own module)", "render-bench-its-own-module"},
		{"See [the CLI](cli.md) now", "see-the-cli-now"},
		{"snake_case and *emphasis*", "snake_case-and-emphasis"},
		{"Größe — über", "größe--über"},
	} {
		if got := Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestScan(t *testing.T) {
	text := "# Title\n" +
		"See [a](a.md#x), ![img](i.png) and [`code`](b.md).\n" +
		"`[not](a link)` [ext](https://example.com)\n" +
		"```sh\n[in](fence.md)\n# not a heading\n```\n" +
		"## Title\n" +
		"### Other *one*\n"
	links, anchors := Scan(text)
	want := []Link{{2, "a.md#x"}, {2, "i.png"}, {2, "b.md"}, {3, "https://example.com"}}
	if diff := cmp.Diff(want, links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"title": true, "title-1": true, "other-one": true}, anchors); diff != "" {
		t.Errorf("anchors (-want +got):\n%s", diff)
	}
}

// Check reports a missing file, a missing heading and a fragment on a
// file that is not Markdown, and accepts what resolves.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sub/target.md", "# Target\n## A `b`: c\n")
	write("code.go", "package x\n")
	write("page.md", "# Page\n"+
		"[ok](sub/target.md#a-b-c) [ok](sub/target.md) [ok](#page) [ok](sub/) [ok](code.go)\n"+
		"[gone](missing.md) [anchor](sub/target.md#nope) [own](#nope) [frag](code.go#L1)\n")
	bad, err := Check(filepath.Join(dir, "page.md"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range bad {
		got = append(got, strings.TrimPrefix(e.Error(), dir+string(filepath.Separator)))
	}
	want := []string{
		`page.md:3: link "missing.md": stat ` + filepath.Join(dir, "missing.md") + `: no such file or directory`,
		`page.md:3: link "sub/target.md#nope": no heading with anchor #nope`,
		`page.md:3: link "#nope": no heading with anchor #nope`,
		`page.md:3: link "code.go#L1": a #fragment needs a Markdown file`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
