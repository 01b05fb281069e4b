package pack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnquote(t *testing.T) {
	long := strings.Repeat("é", 1000)
	tests := []struct {
		name, raw, want string
		// slice is whether the result must be a slice of raw (no copy).
		slice bool
	}{
		{name: "ascii", raw: `"web"`, want: "web", slice: true},
		{name: "empty", raw: `""`, want: ""},
		{name: "valid non-ascii", raw: `"héllo"`, want: "héllo", slice: true},
		{name: "long valid non-ascii", raw: `"` + long + `"`, want: long, slice: true},
		{name: "escape", raw: `"a\"b\u00e9"`, want: `a"bé`},
		{name: "invalid utf-8 after valid non-ascii", raw: "\"é\xff\"", want: "é\uFFFD"},
		{name: "invalid utf-8 first", raw: "\"\xffa\"", want: "\uFFFDa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			got, err := unquote(raw)
			if err != nil {
				t.Fatalf("unquote(%q) = %v", tt.raw, err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("unquote (-want +got):\n%s", diff)
			}
			if isSlice := len(got) > 0 && &got[0] == &raw[1]; isSlice != tt.slice {
				t.Errorf("result is a slice of raw: %v, want %v", isSlice, tt.slice)
			}
		})
	}
	if _, err := unquote([]byte(`"open`)); err == nil {
		t.Error(`unquote("open) = nil error, want one`)
	}
}

// BenchmarkUnquoteNonASCII unquotes a 64 KiB string of two-byte runes,
// which each checked the whole string's UTF-8 when unquote was quadratic.
func BenchmarkUnquoteNonASCII(b *testing.B) {
	raw := []byte(`"` + strings.Repeat("é", 32<<10) + `"`)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := unquote(raw); err != nil {
			b.Fatal(err)
		}
	}
}
