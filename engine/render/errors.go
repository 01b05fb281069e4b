package render

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Error is a render failure located in a template set. Every error that
// Render and Load return is, or wraps, an *Error.
type Error struct {
	// File is the template file, relative to the set's folder.
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
	last := locs[len(locs)-1]
	out := &Error{File: msg[last[2]:last[3]]}
	out.Line, _ = strconv.Atoi(msg[last[4]:last[5]])
	text := executing.ReplaceAllString(msg[last[1]:], "at ")
	var trail []string
	for _, l := range locs[:len(locs)-1] {
		trail = append(trail, msg[l[2]:l[3]]+":"+msg[l[4]:l[5]])
	}
	if len(trail) > 0 {
		text += " (included from " + strings.Join(trail, ", ") + ")"
	}
	out.Err = errors.New(text)
	return out
}
