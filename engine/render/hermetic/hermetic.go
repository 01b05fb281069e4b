// Package hermetic makes a template's functions give the same output for
// the same input: sprig's functions whose value differs on every render
// fail (Refused, Apply), a set that calls one is refused where the call
// is (Check), the date functions refuse to read the clock, and keys and
// values list a map in key order. Loom re-renders a parent whenever one of
// its children changes, so anything else would rewrite the child on every
// reconcile, in a loop.
package hermetic

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/loom-operator/loom/engine/render/deadline"
)

// Refused are the sprig functions whose value differs on every
// render, each with why. Loom re-renders a parent whenever one of its
// children changes, so a child rendered with one of them would be
// rewritten on every reconcile, and that write is itself a change that
// brings the next reconcile: a loop. A set of Loom templates that calls
// one does not load (see Check); in a chart set, a call fails when
// it runs, and the random and generating functions are the parent's
// (chart.SeededFuncs, chart.GeneratedFuncs). The list was made by reading sprig v3.3.0's function
// map; TestSprigFuncsClassified fails when sprig gains a function that
// nobody has classified.
var Refused = map[string]string{
	"now":                      "it reads the clock",
	"ago":                      "it reads the clock",
	"randAlpha":                "it is random",
	"randAlphaNum":             "it is random",
	"randAscii":                "it is random",
	"randNumeric":              "it is random",
	"randBytes":                "it is random",
	"randInt":                  "it is random",
	"shuffle":                  "it is random",
	"uuidv4":                   "it makes a random UUID",
	"bcrypt":                   "it salts the hash at random",
	"htpasswd":                 "it salts the hash at random",
	"encryptAES":               "it encrypts with a random IV",
	"genPrivateKey":            "it makes a new random key",
	"genCA":                    "it makes a new random key and certificate",
	"genSelfSignedCert":        "it makes a new random key and certificate",
	"genSignedCert":            "it makes a new random key and certificate",
	"genCAWithKey":             "it makes a certificate with a random serial number, valid from the time of the render",
	"genSelfSignedCertWithKey": "it makes a certificate with a random serial number, valid from the time of the render",
	"genSignedCertWithKey":     "it makes a certificate with a random serial number, valid from the time of the render",
}

// refusalAdvice says what to do instead of calling a refused function.
const refusalAdvice = "take the value from the parent (its spec, or metadata.creationTimestamp through toDate for a time) " +
	"or read it from a Secret with lookup; in a chart set (chart: in loom.yaml), the rand functions, shuffle and uuidv4 " +
	"give stable values per parent, and keys, certificates and salted hashes are kept per parent"

// refusedError is the error of a template that calls fn, a refused function.
func refusedError(fn string) error {
	return fmt.Errorf("template uses %s, whose value differs on every render (%s): "+
		"Loom would rewrite the child on every reconcile, in a loop; %s", fn, Refused[fn], refusalAdvice)
}

// Apply makes sprig's map m give the same output for the same input:
// each refused function becomes one that fails (the parser still knows
// its name, so that Load can say why it refuses the set, and text that
// tpl parses while rendering fails when it calls one), the date functions
// refuse to read the clock, and keys and values list a map in key order.
func Apply(m template.FuncMap) {
	for name := range Refused {
		err := refusedError(name)
		m[name] = func(...any) (any, error) { return nil, err }
	}
	m["printf"] = printf
	date := m["date"].(func(string, any) string)
	inZone := m["dateInZone"].(func(string, any, string) string)
	html := m["htmlDate"].(func(any) string)
	htmlInZone := m["htmlDateInZone"].(func(any, string) string)
	round := m["durationRound"].(func(any) string)
	m["date"] = func(layout string, t any) (string, error) {
		return date(layout, t), needTime("date", t)
	}
	m["dateInZone"] = func(layout string, t any, zone string) (string, error) {
		return inZone(layout, t, zone), needTime("dateInZone", t)
	}
	m["date_in_zone"] = func(layout string, t any, zone string) (string, error) {
		return inZone(layout, t, zone), needTime("date_in_zone", t)
	}
	m["htmlDate"] = func(t any) (string, error) { return html(t), needTime("htmlDate", t) }
	m["htmlDateInZone"] = func(t any, zone string) (string, error) {
		return htmlInZone(t, zone), needTime("htmlDateInZone", t)
	}
	m["durationRound"] = func(d any) (string, error) {
		if _, ok := d.(time.Time); ok {
			return "", clockError("durationRound", d, "the time since it")
		}
		return round(d), nil
	}
	m["keys"] = sortedKeys
	m["values"] = sortedValues
}

// needTime refuses what sprig's date functions replace with the time of
// the render: anything but a time or a Unix time in seconds.
func needTime(fn string, t any) error {
	switch t.(type) {
	case time.Time, *time.Time, int, int32, int64:
		return nil
	}
	return clockError(fn, t, "the time of the render")
}

// clockError is the error of fn called with v, which would make it
// format what, read from the clock.
func clockError(fn string, v any, what string) error {
	of := "nothing (a missing value?)"
	if v != nil {
		of = fmt.Sprintf("a %T", v)
	}
	return fmt.Errorf("%s of %s would read the clock (sprig formats %s), so its value would differ on every render: "+
		"Loom would rewrite the child on every reconcile, in a loop; pass a time (from toDate) or a Unix time in seconds", fn, of, what)
}

// sortedKeys is sprig's keys, each map's keys in order (sprig's follow
// Go's map order, which differs from one call to the next).
func sortedKeys(dicts ...map[string]any) []string {
	out := []string{}
	for _, d := range dicts {
		start := len(out)
		for k := range d {
			out = append(out, k)
		}
		sort.Strings(out[start:])
	}
	return out
}

// sortedValues is sprig's values, in the order of their keys.
func sortedValues(dict map[string]any) []any {
	out := make([]any, 0, len(dict))
	for _, k := range sortedKeys(dict) {
		out = append(out, dict[k])
	}
	return out
}

// Check fails when a template of t calls a refused function,
// naming the first call by file and line, wherever it is: in a file, in a
// define (used or not), in the status template.
func Check(t *template.Template, sources map[string][]byte) error {
	var found *CallError
	pos := 0
	for _, tmpl := range t.Templates() {
		if tmpl.Tree == nil || tmpl.Tree.Root == nil {
			continue
		}
		file := tmpl.Tree.ParseName
		WalkIdentifiers(tmpl.Tree.Root, func(id *parse.IdentifierNode) {
			if _, ok := Refused[id.Ident]; !ok {
				return
			}
			if found == nil || file < found.File || (file == found.File && int(id.Pos) < pos) {
				found, pos = &CallError{File: file, Line: deadline.LineAt(sources[file], int(id.Pos)), Err: refusedError(id.Ident)}, int(id.Pos)
			}
		})
	}
	if found == nil {
		return nil
	}
	return found
}

// WalkIdentifiers calls visit for each function name in the parse tree
// under node.
func WalkIdentifiers(node parse.Node, visit func(*parse.IdentifierNode)) {
	deadline.Walk(node, func(n parse.Node) {
		if id, ok := n.(*parse.IdentifierNode); ok {
			visit(id)
		}
	})
}

// printf is text/template's printf without the %p verb, which prints where
// a value sits in memory: a render's data is copied afresh each time, so
// the address differs on every render, as a random value does.
func printf(format string, args ...any) (string, error) {
	if pointerVerb(format) {
		return "", errors.New("printf: %p prints a memory address, which differs on every render: " +
			"Loom would rewrite the child on every reconcile, in a loop")
	}
	return fmt.Sprintf(format, args...), nil
}

// pointerVerb reports whether a fmt format string has a %p verb.
func pointerVerb(format string) bool {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.*[]", format[i]) >= 0 {
			i++ // flags, width, precision, argument index
		}
		if i < len(format) && format[i] == 'p' {
			return true
		}
	}
	return false
}

// CallError is a call of a refused function, where a template makes it.
type CallError struct {
	File string
	Line int
	Err  error
}

// Error is the message with the template's file and line.
func (e *CallError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns why the function is refused.
func (e *CallError) Unwrap() error { return e.Err }
