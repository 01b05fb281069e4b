package render

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/loom-operator/loom/engine/render/validate"
	"github.com/loom-operator/loom/engine/render/yamldoc"
)

// source is a template file's text: a set's own file, or one of its
// chart's templates (by its path in the chart, e.g. web/templates/a.yaml).
func (s *Set) source(file string) []byte {
	if b, ok := s.sources[file]; ok {
		return b
	}
	return s.chartTexts[file]
}

// docLine returns the source line where document idx (1-based) of file
// starts (yamldoc.DocLine).
func (s *Set) docLine(file string, idx int) int { return yamldoc.DocLine(s.source(file), idx) }

// findLine returns the first line, at or after from, whose text contains
// needle, or from when none does.
func (s *Set) findLine(file string, from int, needle string) int {
	if needle == "" {
		return from
	}
	return s.findMatch(file, from, func(line []byte) bool { return bytes.Contains(line, []byte(needle)) })
}

// findKeyLine returns the first line, at or after from, that holds the
// mapping key key (yamldoc.IsKeyLine), or from when none does.
func (s *Set) findKeyLine(file string, from int, key string) int {
	return s.findMatch(file, from, func(line []byte) bool { return yamldoc.IsKeyLine(line, key) })
}

// findMatch returns the first line, at or after from and within the same
// document, that match accepts, or from when none does.
func (s *Set) findMatch(file string, from int, match func(line []byte) bool) int {
	return yamldoc.FindLine(s.source(file), from, match)
}

// yamlLine matches the line number in a yaml.v2 error.
var yamlLine = regexp.MustCompile(`line (\d+):? `)

// yamlError locates a YAML parse error. The parser's line is relative to the
// rendered document; the error quotes that rendered line, and points at the
// template line that holds the same text when there is one.
func (s *Set) yamlError(file string, doc int, text []byte, err error) error {
	start := s.docLine(file, doc)
	line := start
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		lines := strings.Split(string(text), "\n")
		if n >= 1 && n <= len(lines) {
			rendered := lines[n-1]
			line = s.findLine(file, start, strings.TrimSpace(rendered))
			msg = fmt.Sprintf("%s (rendered line %d of the document: %q)", msg, n, rendered)
		}
	}
	return &Error{File: file, Line: line, Doc: doc, Err: fmt.Errorf("invalid YAML: %s", msg)}
}

// unknownField matches the field name in a strict-decoding error.
var unknownField = regexp.MustCompile(`unknown field "(?:[^"]*\.)?([^".]+)"`)

// validationError locates a validation failure at the offending field's
// line when the error names a field that the template spells out.
func (s *Set) validationError(file string, doc int, obj map[string]any, err error) error {
	line := s.docLine(file, doc)
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		line = s.findKeyLine(file, line, m[1])
	} else if f := validate.FieldOf(err); f != "" {
		line = s.findKeyLine(file, line, f)
	}
	return &Error{File: file, Line: line, Doc: doc, Object: objectName(obj), Err: err}
}
