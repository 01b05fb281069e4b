package render

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/loom-operator/loom/engine/chart"
)

// Error is a render failure located in a template set. Every error that
// Render and Load return is, or wraps, an *Error.
type Error struct {
	// File is the template file, relative to the set's folder; "" for an
	// error about the folder itself (it does not exist).
	File string
	// Line is the 1-based line in File, or 0 when it is not known.
	Line int
	// Doc is the 1-based index of the YAML document within the file's
	// rendered output, or 0 when the error is not about one document.
	Doc int
	// Object names the rendered object ("Deployment web") when known.
	Object string
	// Err is the underlying cause.
	Err error
}

// Error formats the location first, in the file:line form editors understand.
func (e *Error) Error() string {
	if e.File == "" && e.Line == 0 && e.Doc == 0 && e.Object == "" {
		return e.Err.Error() // about the set's folder as a whole
	}
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Doc > 0 {
		fmt.Fprintf(&b, " (document %d)", e.Doc)
	}
	if e.Object != "" {
		b.WriteString(" ")
		b.WriteString(e.Object)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrRender marks every error caused by a template set or by a parent's
// spec, as opposed to an error of the environment. Callers treat it as
// terminal: retrying the same inputs gives the same error.
var ErrRender = errors.New("render failed")

// Is reports that every *Error is an ErrRender.
func (e *Error) Is(target error) bool { return target == ErrRender }

// tmplLoc matches the location text/template puts in parse and exec errors:
// "template: deployment.yaml:12:20: executing ..." or "template: x.yaml:3: ...".
var tmplLoc = regexp.MustCompile(`template: ([^:]+):(\d+)(?::\d+)?: `)

// executing matches text/template's `executing "name" at <action>: ` prefix.
var executing = regexp.MustCompile(`executing "[^"]*" at `)

// unclosedAt matches where text/template says an unclosed action starts.
var unclosedAt = regexp.MustCompile(`unclosed action started at ([^:\s]+):(\d+)`)

// fromTemplateError turns a text/template error into an *Error located at
// the innermost template file and line that the message names. When the
// failure is inside an include, the outer locations are kept as a trail.
func fromTemplateError(file string, err error) *Error {
	var re *Error
	if errors.As(err, &re) {
		return re
	}
	msg := err.Error()
	locs := tmplLoc.FindAllStringSubmatchIndex(msg, -1)
	if len(locs) == 0 {
		return &Error{File: file, Err: err}
	}
	loc := func(l []int) string { return msg[l[2]:l[3]] + ":" + msg[l[4]:l[5]] }
	last := locs[len(locs)-1]
	text := executing.ReplaceAllString(msg[last[1]:], "at ")
	// Text that tpl parsed is in no file: name the innermost file instead,
	// and say where in the tpl text the error is.
	at := len(locs) - 1
	for at > 0 && isTplName(msg[locs[at][2]:locs[at][3]]) {
		at--
	}
	if at < len(locs)-1 {
		text = "in " + loc(last) + ": " + text
	}
	out := &Error{File: msg[locs[at][2]:locs[at][3]]}
	out.Line, _ = strconv.Atoi(msg[locs[at][4]:locs[at][5]])
	// The parser reports an unclosed action where the file ends; the line
	// to fix is where the action starts.
	if m := unclosedAt.FindStringSubmatchIndex(text); m != nil && text[m[2]:m[3]] == out.File {
		out.Line, _ = strconv.Atoi(text[m[4]:m[5]])
		text = text[:m[0]] + "unclosed action" + text[m[1]:]
	}
	var trail []string
	for _, l := range locs[:at] {
		if !isTplName(msg[l[2]:l[3]]) {
			trail = append(trail, loc(l))
		}
	}
	if len(trail) > 0 {
		text += " (included from " + foldRepeats(trail) + ")"
	}
	out.Err = errors.New(text)
	return out
}

// foldRepeats joins locations, writing a run of one location once with a
// count, so that a template that includes itself gives a short message.
func foldRepeats(locs []string) string {
	var b strings.Builder
	for i := 0; i < len(locs); {
		j := i + 1
		for j < len(locs) && locs[j] == locs[i] {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(locs[i])
		if j-i > 1 {
			fmt.Fprintf(&b, " (%d times)", j-i)
		}
		i = j
	}
	return b.String()
}

// isTplName reports whether a template name is text that tpl parsed:
// Loom's name for it, or Helm's in a chart.
func isTplName(name string) bool { return name == tplName || name == chart.TplName }
