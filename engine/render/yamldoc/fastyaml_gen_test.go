package yamldoc

import (
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// genScalars are the values the document generator writes: mostly inside
// DecodeFast's subset, and some just outside it.
var (
	genScalars = []string{"x", "1", "-1", "0", "true", "null", "\"q\"", "'q'", "{}", "[]", "8ff3", "a b", "x #c", "-x", "é ü"}
	genOdd     = []string{
		"", "01", "1.0", ".5", ".x", "1e3", "0x1F", "1_0", "2001-12-14", "1:30", "yes", "Y", "n", "off", "~", "Null",
		"'it''s'", "\"\\n\\t\\u00e9\\\"\\\\\"", "\"\\x41\"", "\"\\ud800\"", "\"\\u0000\"", "[1]", "{a: b}", "&x 1", "*x", "|", ">",
		"!!str 1", "x#c", "a: b", "a:", "- x", "-", "--x", "9223372036854775808", "'x' #c", "\"x\"#c", "\"x\" y",
		"\"open", "'open", "%x", "@x", "`x", ",x", "x,y", "<<", ".inf", "+.5", ".", "...", "---", "0b1", "-0b1", "0o7",
		"1e", "12:30:00", "+", "+-1", "1__0", "_1", "x\u00a0y", "a\tb", "a\rb",
	}
	genKeys = []string{"\"a\"", "'b'", "y", "1", "-a", "a b", ".x", "<<", "~", "a#b", "\"\"", "a:b", "'a''b'", "é", "a ", "?", "&a a", "on"}
)

// docGen writes random YAML documents shaped like rendered templates.
type docGen struct {
	r *rand.Rand
	b strings.Builder
}

// pick returns a random element of l.
func (g *docGen) pick(l []string) string { return l[g.r.Intn(len(l))] }

// scalar returns a scalar, now and then one outside the subset.
func (g *docGen) scalar() string {
	if g.r.Intn(25) == 0 {
		return g.pick(genOdd)
	}
	return g.pick(genScalars)
}

// indent writes ind spaces, now and then one more or one fewer.
func (g *docGen) indent(ind int) {
	if g.r.Intn(150) == 0 {
		ind += g.r.Intn(3) - 1
	}
	g.b.WriteString(strings.Repeat(" ", max(ind, 0)))
}

// mapping writes a block mapping at indentation ind, with keys a, b, ...
// (an item's mapping starts with z).
func (g *docGen) mapping(ind, depth int) {
	for i := range 1 + g.r.Intn(4) {
		if g.r.Intn(8) == 0 {
			g.b.WriteString(strings.Repeat(" ", g.r.Intn(6)) + g.pick([]string{"# c", "", " "}) + "\n")
		}
		g.indent(ind)
		key := string(rune('a' + i))
		if g.r.Intn(30) == 0 {
			key = g.pick(genKeys)
		}
		g.b.WriteString(key)
		switch n := g.r.Intn(6); {
		case depth > 2 || n < 2:
			g.b.WriteString(g.pick([]string{": ", ": ", ":  "}) + g.scalar() + g.pick([]string{"", "", " ", " #c", "#c"}) + "\n")
		case n < 4:
			g.b.WriteString(":" + g.pick([]string{"", " ", " # c"}) + "\n")
			g.mapping(ind+1+g.r.Intn(3), depth+1)
		default:
			g.b.WriteString(":" + g.pick([]string{"", " ", " # c"}) + "\n")
			g.sequence(ind+g.r.Intn(2)*(1+g.r.Intn(3)), depth+1)
		}
	}
}

// sequence writes a block sequence at indentation ind.
func (g *docGen) sequence(ind, depth int) {
	for range 1 + g.r.Intn(3) {
		g.indent(ind)
		dash := g.pick([]string{"- ", "- ", "-  ", "-"})
		g.b.WriteString(dash)
		n := g.r.Intn(5)
		if depth > 2 {
			n = 0
		}
		if dash == "-" && n != 3 {
			dash = "- " // content on the same line needs the space
			g.b.WriteString(" ")
		}
		switch col := ind + len(dash); n {
		case 0:
			g.b.WriteString(g.scalar() + g.pick([]string{"", " ", " #c"}) + "\n")
		case 1, 2:
			g.b.WriteString("z: " + g.scalar() + "\n")
			if g.r.Intn(2) == 0 {
				g.mapping(col, depth+1)
			}
		case 3:
			g.b.WriteString("\n")
			g.mapping(ind+1+g.r.Intn(3), depth+1)
		case 4:
			g.b.WriteString("- " + g.scalar() + "\n")
			if g.r.Intn(2) == 0 {
				g.sequence(col, depth+1)
			}
		}
	}
}

// TestFastDecodeGenerated checks DecodeFast against yaml.v2 on random
// documents with the structure of rendered templates, which reach deeper
// into its subset than byte-level fuzzing does.
func TestFastDecodeGenerated(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	g := &docGen{r: rand.New(rand.NewSource(1))}
	read := 0
	for range n {
		g.b.Reset()
		g.mapping(0, 0)
		doc := []byte(g.b.String())
		got, err := DecodeFast(doc)
		if errors.Is(err, ErrUnsupported) {
			continue
		}
		read++
		want, wantErr := DecodeV2(doc)
		switch {
		case err != nil:
			t.Fatalf("DecodeFast(%q): %v", doc, err)
		case wantErr != nil:
			t.Fatalf("yaml.v2 failed but DecodeFast did not\ndoc: %q\nerr: %v\ngot: %#v", doc, wantErr, got)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("DecodeFast(%q) mismatch (-yaml.v2 +DecodeFast):\n%s", doc, diff)
		}
	}
	t.Logf("DecodeFast read %d of %d documents", read, n)
	if read < n/4 {
		t.Errorf("DecodeFast read %d of %d documents; the generator strays too far from its subset", read, n)
	}
}
