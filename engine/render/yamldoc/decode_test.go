package yamldoc

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeYAML checks the values Decode produces: those that
// Kubernetes' JSON decoding would produce from kubectl's YAML → JSON.
func TestDecodeYAML(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want map[string]any
	}{
		{"empty", "", nil},
		{"only comments", "# a\n# b\n", nil},
		{"scalars", "s: x\ni: 1\nf: 1.5\nb: true\nnul: null\ne: ~\n", map[string]any{"s": "x", "i": int64(1), "f": 1.5, "b": true, "nul": nil, "e": nil}},
		{"YAML 1.1 booleans", "a: yes\nb: no\nc: on\nd: off\ne: y\nf: \"yes\"\n", map[string]any{"a": true, "b": false, "c": true, "d": false, "e": true, "f": "yes"}},
		{"YAML 1.1 boolean keys", "y: 1\nn: 2\n", map[string]any{"true": int64(1), "false": int64(2)}},
		{"quoted numbers stay strings", "a: \"1\"\nb: '2.0'\n", map[string]any{"a": "1", "b": "2.0"}},
		{"integral floats become int64", "a: 1.0\nb: 1e3\nc: -0.0\nd: 1.0e17\n", map[string]any{"a": int64(1), "b": int64(1000), "c": int64(0), "d": int64(100000000000000000)}},
		{"integral floats beyond 2^53 in their shortest form", "a: 0020000000000000008\nb: 9.007199254740993e15\n", map[string]any{"a": int64(20000000000000010), "b": int64(9007199254740992)}},
		{"other floats stay float64", "a: 0.5\nb: 1e-7\nc: 1.0e19\nd: 1.0e21\n", map[string]any{"a": 0.5, "b": 1e-7, "c": 1e19, "d": 1e21}},
		{"big integers", "a: 9007199254740993\nb: 9223372036854775807\nc: 9223372036854775808\nd: -9223372036854775808\n", map[string]any{"a": int64(9007199254740993), "b": int64(math.MaxInt64), "c": 9223372036854775808.0, "d": int64(math.MinInt64)}},
		{"other integer notations", "a: 0x1F\nb: 017\nc: 1_000\n", map[string]any{"a": int64(31), "b": int64(15), "c": int64(1000)}},
		{"timestamps stay strings", "a: 2001-12-14\nb: !!timestamp 2001-12-14\n", map[string]any{"a": "2001-12-14", "b": "2001-12-14"}},
		{"non-string keys", "1: a\n2.5: b\ntrue: c\n0.1: d\n3.14159265358979: e\n", map[string]any{"1": "a", "2.5": "b", "true": "c", "0.1": "d", "3.1415927": "e"}},
		{"anchors and merge keys", "base: &b {x: 1}\nother: *b\nmerged:\n  <<: *b\n  z: 2\n", map[string]any{"base": map[string]any{"x": int64(1)}, "other": map[string]any{"x": int64(1)}, "merged": map[string]any{"x": int64(1), "z": int64(2)}}},
		{"nested lists", "l: [1, [2, {a: b}], [], {}]\n", map[string]any{"l": []any{int64(1), []any{int64(2), map[string]any{"a": "b"}}, []any{}, map[string]any{}}}},
		{"binary", "a: !!binary aGVsbG8=\nb: !!binary /w==\n", map[string]any{"a": "hello", "b": "\uFFFD"}},
		{"only the first document", "a: 1\n---\nb: 2\n", map[string]any{"a": int64(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.doc))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeYAMLErrors checks the documents Decode refuses.
func TestDecodeYAMLErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"syntax", "a: b: c\n", "yaml: mapping values are not allowed in this context"},
		{"syntax on a later line", "a: 1\nb: [\n", "yaml: line 2: did not find expected node content"},
		{"a list", "- a\n", "a document must be a YAML mapping (an object), not []interface {}"},
		{"a scalar", "hello\n", "a document must be a YAML mapping (an object), not string"},
		{"infinity", "a: .inf\n", "a: unsupported value +Inf"},
		{"NaN in a list", "a: [1, .nan]\n", "a: [1]: unsupported value NaN"},
		{"null key", "~: x\n", "unsupported map key of type <nil>: <nil>"},
		{"key beyond int64", "18446744073709551615: x\n", "unsupported map key of type uint64: 18446744073709551615"},
		{"keys that collide", "1: a\n\"1\": b\n", `two keys of a mapping convert to the same string: "1"`},
		{"nested keys that collide", "m:\n  true: a\n  \"true\": b\n", `m: two keys of a mapping convert to the same string: "true"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.doc))
			if err == nil {
				t.Fatal("Decode succeeded, want an error")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Decode([]byte("1: a\n\"1\": b\n")); !errors.Is(err, errKeyCollision) {
		t.Errorf("errors.Is(%v, errKeyCollision) = false", err)
	}
}
