package yamldoc

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFastDecode checks the values DecodeFast reads from documents in its
// subset.
func TestFastDecode(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want map[string]any
	}{
		{"empty", "", nil},
		{"only comments and blank lines", "# a\n\n   \n  # b\n", nil},
		{"scalars", "s: x\ni: 1\nneg: -1\npos: +1\nzero: 0\nb: true\nnul: null\ne: ~\nnothing:\n", map[string]any{
			"s": "x", "i": int64(1), "neg": int64(-1), "pos": int64(1), "zero": int64(0), "b": true, "nul": nil, "e": nil, "nothing": nil}},
		{"YAML 1.1 booleans", "a: yes\nb: No\nc: ON\nd: off\ne: y\nf: N\ng: True\n", map[string]any{
			"a": true, "b": false, "c": true, "d": false, "e": true, "f": false, "g": true}},
		{"strings that look like others but are not", "a: yEs\nb: nul\nc: x#c\nd: a:b\ne: http://x:80/y\nf: .dockerconfigjson\ng: a - b\n", map[string]any{
			"a": "yEs", "b": "nul", "c": "x#c", "d": "a:b", "e": "http://x:80/y", "f": ".dockerconfigjson", "g": "a - b"}},
		{"strings that start like numbers", "sha: 8ff3394871586108bdd1f89fc17ec9ede93e8c02afba4c9e7c26615823cf8242\nt: 1:30\nu: 10Mi\nv: -x\nw: +a\n", map[string]any{
			"sha": "8ff3394871586108bdd1f89fc17ec9ede93e8c02afba4c9e7c26615823cf8242", "t": "1:30", "u": "10Mi", "v": "-x", "w": "+a"}},
		{"comments", "# head\na: x #c\nb: 'y' # c\nc: \"z\"   # c\nd: # c\n  e: 1\n", map[string]any{
			"a": "x", "b": "y", "c": "z", "d": map[string]any{"e": int64(1)}}},
		{"trailing spaces", "a: x  \nb:   \nc: 'q'  \n", map[string]any{"a": "x", "b": nil, "c": "q"}},
		{"quoted", `a: "quoted: x"` + "\nb: 'it''s'\nc: \"\\\"\\\\\\n\\t\\u00e9\"\nd: ''\ne: \"1\"\n", map[string]any{
			"a": "quoted: x", "b": "it's", "c": "\"\\\n\t\u00e9", "d": "", "e": "1"}},
		{"quoted keys", "\"a\": 1\n'yes': 2\n\"1\": 3\n", map[string]any{"a": int64(1), "yes": int64(2), "1": int64(3)}},
		{"empty flow collections", "a: {}\nb: []\nc: {} # c\n", map[string]any{"a": map[string]any{}, "b": []any{}, "c": map[string]any{}}},
		{"nested mappings", "a:\n  b:\n    c: d\n  e: f\ng: h\n", map[string]any{
			"a": map[string]any{"b": map[string]any{"c": "d"}, "e": "f"}, "g": "h"}},
		{"indented sequence", "containers:\n  - name: app\n    image: nginx\n  - name: side\nx: 1\n", map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": "nginx"}, map[string]any{"name": "side"}}, "x": int64(1)}},
		{"sequence at its key's indentation", "containers:\n- name: app\n  ports:\n  - 80\n  - 443\n- name: side\nx: 1\n", map[string]any{
			"containers": []any{map[string]any{"name": "app", "ports": []any{int64(80), int64(443)}}, map[string]any{"name": "side"}}, "x": int64(1)}},
		{"nested sequences", "a:\n- - x\n  - w\n- -\n-\n- z\n", map[string]any{"a": []any{[]any{"x", "w"}, []any{nil}, nil, "z"}}},
		{"wide item indentation", "a:\n-   b: 1\n    c: 2\n", map[string]any{"a": []any{map[string]any{"b": int64(1), "c": int64(2)}}}},
		{"indented document", "  a: 1\n  b: 2\n", map[string]any{"a": int64(1), "b": int64(2)}},
		{"unicode", "ключ: значение\nemoji: \"\U0001F600\"\n", map[string]any{"ключ": "значение", "emoji": "\U0001F600"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeFast([]byte(tt.doc))
			if err != nil {
				t.Fatalf("DecodeFast: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeFast mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// fastUnsupported are documents that DecodeFast must leave to yaml.v2:
// they are outside its subset, or not valid YAML, or hold scalars whose
// resolution it does not replicate.
var fastUnsupported = []string{
	"on: yes\n", "1: a\n", "~: a\n", "null: a\n", "<<: a\n",
	"a: 1.0\n", "a: 012\n", "a: 0x1F\n", "a: 1_000\n", "a: 2001-12-14\n",
	"a: 9223372036854775808\n", "a: .5\n", "a: 1e3\n", "a: .inf\n", "a: -\n", "a: - x\n", "a: 0b1\n", "a: -0b1\n", "a: 0o7\n", "a: 1e5\n", "a: 0-1\n",
	"a: b: c\n", "a: b:\n", "a: &x 1\n", "a: *x\n", "a: !!str 1\n", "a: |\n  x\n", "a: >\n  x\n",
	"a: [1, 2]\n", "a: {b: c}\n", "[1, 2]\n", "{}\n", "[]\n", "- a\n", "hello\n",
	"? a\n: b\n", "a: 1\r\nb: 2\r\n", "a:\t1\n", "a:\n\t- b\n", "%YAML 1.1\n---\na: 1\n",
	"a: 1\na: 2\n", "a: x\n  y\n", "a:\n  b\n  c\n", "a: \"x\n  y\"\n", "a: 'x\n  y'\n",
	"a: \"\\x41\"\n", "a: \"\\ud800\"\n", "\"a\":1\n", "a : 1\n", "a: \"x\" y\n", "a: \"x\"#c\n",
	"a: 1\n b: 2\n", "a:\n  b: 1\n c: 2\n", "- a: 1\n  - b\n", "a: 1\n---\nb: 2\n", "a: x\x00\n",
	"a: \u2028\n", "\ufeffa: 1\n", "a: \xff\n", "a:b\n", "a: @x\n", "a: `x\n",
}

// TestFastDecodeUnsupported checks that DecodeFast leaves what it does not
// read to yaml.v2.
func TestFastDecodeUnsupported(t *testing.T) {
	for _, doc := range fastUnsupported {
		if got, err := DecodeFast([]byte(doc)); !errors.Is(err, ErrUnsupported) {
			t.Errorf("DecodeFast(%q) = %#v, %v; want ErrUnsupported", doc, got, err)
		}
	}
}

// fastSeeds are documents in and around DecodeFast's subset.
var fastSeeds = []string{
	"on: yes\n", "a: 1.0\n", "a: 012\n", "a: 0x1F\n", "a: 1_000\n", "a: 2001-12-14\n",
	"a: \"quoted: x\"\n", "a: 'it''s'\n", "- - nested\n", "a:\n- - nested\n", "a: b: c\n",
	"a: x   \nb: y \n", "a: 1\r\nb: 2\r\n", "a:\t1\n", "\ta: 1\n", "ключ: \"h\\u00e9llo\"\n",
	"key:\nnext: 1\n", "a: -1\n", "a: +1\n", "a: 9223372036854775807\n", "a: 9223372036854775808\n",
	"a: -9223372036854775808\n", "a: .5\n", "a: 1e3\n", "# c\na: 1 # c\n  # c\nb: 2\n", "a: x #c\n",
	"a: x#c\n", "\"a\": 1\n", "? a\n: b\n", "a: |\n  x\n", "a: &x 1\nb: *x\n", "[1, 2]\n", "{}\n", "[]\n",
	"a: {}\nb: []\n", "a:\n  - b: 1\n    c: [] # x\n  - 'q'\n", "a:\n-\n- -\n  - x\n", "a: \"\\t\\n\\\\\\\"\"\n",
	"'a''b': ''\n", "a: y\nb: Y\nc: n\nd: NO\ne: Off\n", "- a\n", "hello\n", "a: 1\na: 2\n",
	"  a:\n  - 1\n  b: 2\n", "a: .dockerconfigjson\n.b: x\n", "a: http://x:8080/y\n",
	"a: 8ff3394871586108bdd1f89fc17ec9ede93e8c02afba4c9e7c26615823cf8242\n", "a: 1:30\nb: 1a\nc: -x\nd: 0b1\ne: 1e\n",
}

// FuzzFastDecodeMatchesYAMLv2 checks that DecodeFast, where it reads a
// document, gives exactly what the yaml.v2 path gives, and fails only
// where that fails too.
func FuzzFastDecodeMatchesYAMLv2(f *testing.F) {
	for _, s := range append(append(goldenDocuments(f), fastSeeds...), decodeSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := DecodeFast(doc)
		if errors.Is(err, ErrUnsupported) {
			return
		}
		want, wantErr := DecodeV2(doc)
		switch {
		case err != nil && wantErr == nil:
			t.Fatalf("DecodeFast failed but yaml.v2 did not\ndoc: %q\nerr: %v\nyaml.v2: %#v", doc, err, want)
		case err != nil:
			return
		case wantErr != nil:
			t.Fatalf("yaml.v2 failed but DecodeFast did not\ndoc: %q\nerr: %v\ngot: %#v", doc, wantErr, got)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("DecodeFast(%q) mismatch (-yaml.v2 +DecodeFast):\n%s", doc, diff)
		}
	})
}

// goldenDocuments returns the documents of the shipped myresource set's
// golden files: its rendered children, as engine/render's MarshalStream
// writes them. (engine/render's TestFastDecodeReadsShippedDocuments holds
// the documents its templates write, and these, inside DecodeFast's subset.)
func goldenDocuments(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "templates", "myresource", "tests", "*.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range Split(b) {
			if !IsBlank(d.Text) {
				docs = append(docs, string(d.Text))
			}
		}
	}
	if len(docs) == 0 {
		t.Fatal("no golden documents")
	}
	return docs
}
