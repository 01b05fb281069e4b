package deadline

import (
	"errors"
	"strings"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"
)

// checks counts the empty writes a guarded template makes, and fails the
// one numbered stopAt (from 1), keeping its bytes.
type checks struct {
	n, stopAt int
	site      []byte
	out       strings.Builder
}

var errStop = errors.New("stop")

func (c *checks) Write(p []byte) (int, error) {
	if len(p) > 0 {
		return c.out.Write(p)
	}
	c.n++
	if c.n == c.stopAt {
		c.site = p
		return 0, errStop
	}
	return 0, nil
}

// A guarded template checks once per template call and once per turn of
// every loop, prints what it printed before, and a failed check is found
// at its loop's line.
func TestGuard(t *testing.T) {
	const text = "first line\n{{ define \"d\" }}{{ range 2 }}d{{ end }}{{ end }}" +
		"{{ range $i, $e := list 1 2 3 }}\n{{ $e }}{{ range 2 }}.{{ end }}{{ template \"d\" }}{{ else }}none{{ end }}"
	parse := func() *template.Template {
		t.Helper()
		tmpl, err := template.New("f.tpl").Funcs(template.FuncMap{"list": func(v ...any) []any { return v }}).Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		return tmpl
	}
	plain := parse()
	var want strings.Builder
	if err := plain.Execute(&want, nil); err != nil {
		t.Fatal(err)
	}

	guarded := parse()
	Guard(guarded, nil)
	Guard(guarded, guarded) // every tree is in skip: nothing is guarded twice
	var all checks
	if err := guarded.Execute(&all, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), all.out.String()); diff != "" {
		t.Errorf("output (-unguarded +guarded):\n%s", diff)
	}
	// 1 (f.tpl) + 3 (outer range) + 3×2 (inner range) + 3 (define d) + 3×2 (d's range)
	if all.n != 19 {
		t.Errorf("checks = %d, want 19", all.n)
	}

	for _, tc := range []struct {
		stopAt   int
		wantLine int
	}{
		{1, 1}, // the template's own body
		{2, 2}, // the outer range, on line 2
		{3, 3}, // the inner range, on line 3
		{5, 2}, // define d's body
		{6, 2}, // d's range
	} {
		c := checks{stopAt: tc.stopAt}
		if err := guarded.Execute(&c, nil); !errors.Is(err, errStop) {
			t.Fatalf("stop at check %d: err = %v", tc.stopAt, err)
		}
		file, line, ok := Site(guarded, c.site)
		if got := []any{file, line, ok}; !cmp.Equal(got, []any{"f.tpl", tc.wantLine, true}) {
			t.Errorf("check %d: Site = %v, want [f.tpl %d true]", tc.stopAt, got, tc.wantLine)
		}
	}
	if _, _, ok := Site(guarded, make([]byte, 0, 1)); ok {
		t.Error("Site found a check for bytes that are none")
	}
}
