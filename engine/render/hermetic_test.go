package render

import (
	"sort"
	"strings"
	"testing"

	"github.com/Masterminds/sprig/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/render/hermetic"
	"github.com/loom-operator/loom/engine/render/tmplfuncs"
)

// clockOrRandom lists, by hand, every function of sprig v3.3.0 whose value
// differs from one render to the next: it reads the clock, or it draws
// random numbers (keys, salts, IVs, serial numbers, UUIDs). A set that
// calls one must not load.
var clockOrRandom = []string{
	// The clock.
	"now", "ago",
	// Random strings and numbers.
	"randAlpha", "randAlphaNum", "randAscii", "randNumeric", "randBytes", "randInt", "shuffle", "uuidv4",
	// Salted hashes and random IVs.
	"bcrypt", "htpasswd", "encryptAES",
	// Keys and certificates: random keys and serial numbers, valid from now.
	"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
	"genSignedCert", "genSignedCertWithKey",
}

// deterministicFuncs lists, by hand, every other function of sprig v3.3.0
// that Loom keeps: each returns the same value for the same arguments.
// The date functions are kept because Loom's versions refuse to read the
// clock (see TestDateNeedsATime); toDate and date read the process's time
// zone, which does not change while Loom runs.
var deterministicFuncs = []string{
	"hello",
	"date", "date_in_zone", "dateInZone", "date_modify", "dateModify", "must_date_modify", "mustDateModify",
	"duration", "durationRound", "htmlDate", "htmlDateInZone", "mustToDate", "toDate", "unixEpoch",
	"abbrev", "abbrevboth", "trunc", "trim", "upper", "lower", "title", "untitle", "substr", "repeat",
	"trimall", "trimAll", "trimSuffix", "trimPrefix", "nospace", "initials", "swapcase", "snakecase",
	"camelcase", "kebabcase", "wrap", "wrapWith", "contains", "hasPrefix", "hasSuffix", "quote", "squote",
	"cat", "indent", "nindent", "replace", "plural", "sha1sum", "sha256sum", "sha512sum", "adler32sum",
	"toString", "atoi", "int64", "int", "float64", "seq", "toDecimal", "split", "splitList", "splitn",
	"toStrings", "until", "untilStep", "add1", "add", "sub", "div", "mod", "mul", "add1f", "addf", "subf",
	"divf", "mulf", "biggest", "max", "min", "maxf", "minf", "ceil", "floor", "round", "join", "sortAlpha",
	"default", "empty", "coalesce", "all", "any", "compact", "mustCompact", "fromJson", "toJson",
	"toPrettyJson", "toRawJson", "mustFromJson", "mustToJson", "mustToPrettyJson", "mustToRawJson",
	"ternary", "deepCopy", "mustDeepCopy", "typeOf", "typeIs", "typeIsLike", "kindOf", "kindIs", "deepEqual",
	"base", "dir", "clean", "ext", "isAbs", "osBase", "osClean", "osDir", "osExt", "osIsAbs",
	"b64enc", "b64dec", "b32enc", "b32dec", "tuple", "list", "dict", "get", "set", "unset", "hasKey",
	"pluck", "keys", "pick", "omit", "merge", "mergeOverwrite", "mustMerge", "mustMergeOverwrite", "values",
	"append", "push", "mustAppend", "mustPush", "prepend", "mustPrepend", "first", "mustFirst", "rest",
	"mustRest", "last", "mustLast", "initial", "mustInitial", "reverse", "mustReverse", "uniq", "mustUniq",
	"without", "mustWithout", "has", "mustHas", "slice", "mustSlice", "concat", "dig", "chunk", "mustChunk",
	"derivePassword", "buildCustomCert", "decryptAES", "semver", "semverCompare", "fail",
	"regexMatch", "mustRegexMatch", "regexFindAll", "mustRegexFindAll", "regexFind", "mustRegexFind",
	"regexReplaceAll", "mustRegexReplaceAll", "regexReplaceAllLiteral", "mustRegexReplaceAllLiteral",
	"regexSplit", "mustRegexSplit", "regexQuoteMeta", "urlParse", "urlJoin",
}

// TestSprigFuncsClassified fails when sprig's function map has a function
// nobody has classified (a sprig upgrade added one): decide whether it is
// deterministic, and add it to deterministicFuncs or to clockOrRandom
// (and to hermetic.Refused).
func TestSprigFuncsClassified(t *testing.T) {
	class := map[string]string{}
	add := func(kind string, names []string) {
		for _, n := range names {
			if other, ok := class[n]; ok {
				t.Errorf("%s is classified twice, as %s and %s", n, other, kind)
			}
			class[n] = kind
		}
	}
	add("removed", tmplfuncs.Removed)
	add("clock or random", clockOrRandom)
	add("deterministic", deterministicFuncs)
	for name := range sprig.TxtFuncMap() {
		if _, ok := class[name]; !ok {
			t.Errorf("sprig's %s is not classified: is it deterministic?", name)
		}
	}
	for name, kind := range class {
		if _, ok := sprig.TxtFuncMap()[name]; !ok {
			t.Errorf("%s (%s) is not in sprig's function map", name, kind)
		}
	}
	var refused []string
	for name := range hermetic.Refused {
		refused = append(refused, name)
	}
	want := append([]string(nil), clockOrRandom...)
	sort.Strings(want)
	sort.Strings(refused)
	if diff := cmp.Diff(want, refused); diff != "" {
		t.Errorf("hermetic.Refused mismatch (-want +got):\n%s", diff)
	}
}

// TestRefusedFuncsFailLoad checks that a set calling a function whose
// value differs on every render does not load, wherever the call is, and
// that the error names the file, the line and the function.
func TestRefusedFuncsFailLoad(t *testing.T) {
	for _, fn := range clockOrRandom {
		t.Run(fn, func(t *testing.T) {
			_, err := LoadFS(fsOf(map[string]string{"a.yaml": "a: 1\nb: {{ " + fn + " }}\n"}), "testset")
			if err == nil {
				t.Fatal("LoadFS succeeded, want an error")
			}
			wantPrefix(t, err.Error(), "a.yaml:2: template uses "+fn+", whose value differs on every render (")
			wantContains(t, err.Error(), "Loom would rewrite the child on every reconcile, in a loop")
		})
	}
	statusConfig := testConfig + "status: status.yaml\n"
	places := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"in a pipeline", map[string]string{"a.yaml": "a: 1\n\nb: {{ now | date \"2006\" }}\n"}, "a.yaml:3: template uses now,"},
		{"in a parenthesized argument", map[string]string{"a.yaml": "a: {{ printf \"%s\" (randAlpha 5) }}\n"}, "a.yaml:1: template uses randAlpha,"},
		{"in an if", map[string]string{"a.yaml": "a: 1\n{{ if eq (randInt 0 2) 1 }}b: 2{{ end }}\n"}, "a.yaml:2: template uses randInt,"},
		{"in a range's else", map[string]string{"a.yaml": "a: 1\n{{ range .Spec.x }}{{ else }}\nb: {{ uuidv4 }}{{ end }}\n"}, "a.yaml:3: template uses uuidv4,"},
		{"in a with's value", map[string]string{"a.yaml": "a: 1\n{{ with $k := genPrivateKey \"rsa\" }}b: {{ $k }}{{ end }}\n"}, "a.yaml:2: template uses genPrivateKey,"},
		{"in a template call's data", map[string]string{"_h.tpl": `{{ define "x" }}{{ . }}{{ end }}`, "a.yaml": "a: {{ template \"x\" (bcrypt \"pw\") }}\n"}, "a.yaml:1: template uses bcrypt,"},
		{"in a define that is never used", map[string]string{"_h.tpl": "{{/* helpers */}}\n\n{{ define \"x\" }}{{ ago 1 }}{{ end }}\n", "a.yaml": "a: 1\n"}, "_h.tpl:3: template uses ago,"},
		{"in the status template", map[string]string{"loom.yaml": statusConfig, "status.yaml": "x: 1\ny: {{ htpasswd \"u\" \"p\" }}\n", "a.yaml": "a: 1\n"}, "status.yaml:2: template uses htpasswd,"},
		{"the first of two, by file and line", map[string]string{"b.yaml": "b: {{ now }}\n", "a.yaml": "a: 1\nb: 2\nc: {{ shuffle \"ab\" }}\nd: {{ uuidv4 }}\n"}, "a.yaml:3: template uses shuffle,"},
	}
	for _, tt := range places {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadFS(fsOf(tt.files), "testset")
			if err == nil {
				t.Fatal("LoadFS succeeded, want an error")
			}
			wantPrefix(t, err.Error(), tt.want)
		})
	}
}

// TestRefusedFuncsInTpl checks that text that tpl parses while rendering
// cannot call a refused function either: the render fails, at the line
// that called tpl.
func TestRefusedFuncsInTpl(t *testing.T) {
	s := loadSet(t, map[string]string{"a.yaml": "a: 1\nb: {{ tpl .Spec.t . }}\n"})
	out, err := execText(t, s, "a.yaml", app(t, "  t: \"{{ randAlphaNum 8 }}\"\n"))
	if err == nil {
		t.Fatalf("execute succeeded with %q, want an error", out)
	}
	wantPrefix(t, err.Error(), "a.yaml:2: ")
	wantContains(t, err.Error(), "template uses randAlphaNum, whose value differs on every render")
}

// TestDateNeedsATime checks that sprig's date functions, which format the
// time of the render when given anything but a time or a Unix time, fail
// instead; given a time they print it.
func TestDateNeedsATime(t *testing.T) {
	const spec = "  epoch: 1700000000\n  when: \"2023-11-14\"\n"
	ok := []struct{ tmpl, want string }{
		{`{{ date "2006-01" .Spec.epoch }}`, "2023-11"},
		{`{{ date "2006-01-02" (toDate "2006-01-02" .Spec.when) }}`, "2023-11-14"},
		{`{{ dateInZone "2006-01-02 15:04" 0 "UTC" }}`, "1970-01-01 00:00"},
		{`{{ date_in_zone "2006-01-02" 86400 "UTC" }}`, "1970-01-02"},
		{`{{ htmlDate .Spec.epoch | trunc 7 }}`, "2023-11"},
		{`{{ htmlDateInZone 0 "UTC" }}`, "1970-01-01"},
		{`{{ durationRound "90m" }} {{ durationRound "-49h" }}`, "1h 2d"},
	}
	for _, tt := range ok {
		t.Run(tt.tmpl, func(t *testing.T) {
			s := loadSet(t, map[string]string{"a.yaml": tt.tmpl})
			got, err := execText(t, s, "a.yaml", app(t, spec))
			if err != nil {
				t.Fatalf("execute: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
	clock := []struct{ fn, tmpl string }{
		{"date", `{{ date "2006" .Spec.when }}`},
		{"date", `{{ date "2006" .Spec.missing }}`},
		{"dateInZone", `{{ dateInZone "2006" "2023" "UTC" }}`},
		{"date_in_zone", `{{ date_in_zone "2006" 1.5 "UTC" }}`},
		{"htmlDate", `{{ htmlDate .Spec.when }}`},
		{"htmlDateInZone", `{{ htmlDateInZone .Spec.when "UTC" }}`},
		{"durationRound", `{{ durationRound (toDate "2006-01-02" .Spec.when) }}`},
	}
	for _, tt := range clock {
		t.Run(tt.tmpl, func(t *testing.T) {
			s := loadSet(t, map[string]string{"a.yaml": "a: 1\n" + tt.tmpl})
			out, err := execText(t, s, "a.yaml", app(t, spec))
			if err == nil {
				t.Fatalf("execute succeeded with %q, want an error", out)
			}
			wantPrefix(t, err.Error(), "a.yaml:2: ")
			wantContains(t, err.Error(), tt.fn+" of ", "would read the clock", "Loom would rewrite the child on every reconcile, in a loop")
		})
	}
}

// TestKeysAndValuesInOrder checks that keys and values list a map in the
// order of its keys: sprig's follow Go's map order, which differs from one
// render to the next.
func TestKeysAndValuesInOrder(t *testing.T) {
	letters := strings.Split("qwertyuiopasdfghjklzxcvbnm", "")
	var args []string
	for _, l := range letters {
		args = append(args, `"`+l+`" "`+strings.ToUpper(l)+`"`)
	}
	d := "(dict " + strings.Join(args, " ") + ")"
	s := loadSet(t, map[string]string{"a.yaml": `{{ keys ` + d + ` | join "" }} {{ values ` + d + ` | join "" }} {{ keys (dict "b" 1) (dict "a" 2 "c" 3) | join "" }}`})
	got, err := execText(t, s, "a.yaml", app(t, ""))
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	want := "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ bac"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
}

// TestPrintfRefusesPointers checks that printf's %p verb, which prints
// where a value sits in memory (a render's data is copied afresh each
// time, so it differs on every render), fails the render with file:line,
// while other verbs and a literal "%p" still print.
func TestPrintfRefusesPointers(t *testing.T) {
	for _, tmpl := range []string{`{{ printf "%p" .Spec }}`, `{{ printf "x %-8p" .Spec }}`, `{{ printf "%[1]p" .Spec }}`} {
		t.Run(tmpl, func(t *testing.T) {
			s := loadSet(t, map[string]string{"a.yaml": "a: 1\nb: '" + tmpl + "'\n"})
			out, err := execText(t, s, "a.yaml", app(t, "  x: 1\n"))
			if err == nil {
				t.Fatalf("execute succeeded with %q, want an error", out)
			}
			wantPrefix(t, err.Error(), "a.yaml:2: ")
			wantContains(t, err.Error(), "%p prints a memory address")
		})
	}
	for tmpl, want := range map[string]string{`{{ printf "%d%%p %s" 5 "x" }}`: "5%p x", `{{ printf "%v" 7 }}`: "7"} {
		s := loadSet(t, map[string]string{"a.yaml": tmpl})
		got, err := execText(t, s, "a.yaml", app(t, ""))
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", tmpl, got, err, want)
		}
	}
}
