package modes

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render/yamldoc"
)

// LineError is a template line that Scan refuses.
type LineError struct {
	File string
	Line int
	Err  error
}

// Error is the message with the template's file and line.
func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns the reason.
func (e *LineError) Unwrap() error { return e.Err }

var (
	manageLine = regexp.MustCompile(`^[ \t]+["']?loom\.dev/manage["']?:[ \t]*(.*)$`)
	topKey     = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.-]*):`)
	nestedKey  = regexp.MustCompile(`^([ \t]+)([A-Za-z_][A-Za-z0-9_.-]*):`)
)

// Scan reads a set's templates (file name → text), before any render, for
// what a literal loom.dev/manage says: a value that is not a mode, and an
// observed child whose template sets a top-level field or a metadata
// field Loom would never apply. It returns the first, in file order, as a
// *LineError. A computed value, and fields a template action prints, are
// left to the render (Of, Observed), which sees them.
// setDefault is loom.yaml's manage: the mode of a document without the
// annotation.
func Scan(texts map[string][]byte, setDefault string) error {
	return eachDoc(texts, func(file string, lines []string, first int) error {
		return scanDoc(file, lines, first, setDefault)
	})
}

// ObservedDocs returns, per file, the line ranges (first and last line, from
// 1) of the documents whose loom.dev/manage is literally observe: `loom
// rbac` grants Loom no create or delete on a kind that only such
// documents name.
func ObservedDocs(texts map[string][]byte, setDefault string) map[string][][2]int {
	out := map[string][][2]int{}
	_ = eachDoc(texts, func(file string, lines []string, first int) error {
		if mode, _ := literalMode(file, lines, first, setDefault); mode == object.ManageObserve {
			out[file] = append(out[file], [2]int{first + 1, first + len(lines)})
		}
		return nil
	})
	return out
}

// eachDoc calls fn on each document of each file, in file order, with
// its lines and the number of lines before it; it stops at fn's error.
func eachDoc(texts map[string][]byte, fn func(file string, lines []string, first int) error) error {
	files := make([]string, 0, len(texts))
	for f := range texts {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		lines := strings.Split(string(texts[f]), "\n")
		start := 0
		for i := 0; i <= len(lines); i++ {
			if i < len(lines) && !yamldoc.IsSeparator([]byte(lines[i])) {
				continue
			}
			if err := fn(f, lines[start:i], start); err != nil {
				return err
			}
			start = i + 1
		}
	}
	return nil
}

// literalMode returns the literal loom.dev/manage of a document
// (setDefault when it has none, "" when a template action computes it),
// or the *LineError of a value that is not a mode.
func literalMode(file string, lines []string, first int, setDefault string) (string, error) {
	for i, l := range lines {
		m := manageLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v := literal(m[1])
		if v == "" {
			return "", nil // computed: the render checks it
		}
		if err := object.CheckManage(v); err != nil {
			return "", &LineError{File: file, Line: first + i + 1, Err: err}
		}
		return v, nil
	}
	return setDefault, nil
}

// scanDoc scans one document, whose first line is line first+1.
func scanDoc(file string, lines []string, first int, setDefault string) error {
	if isBlank(lines) {
		return nil
	}
	mode, err := literalMode(file, lines, first, setDefault)
	if err != nil || mode != object.ManageObserve {
		return err
	}
	inMeta, metaIndent := false, ""
	for i, l := range lines {
		if k := topKey.FindStringSubmatch(l); k != nil {
			inMeta = k[1] == "metadata"
			if !slices.Contains(allowedObserved, k[1]) {
				return &LineError{File: file, Line: first + i + 1, Err: &ObservedFieldsError{Field: k[1]}}
			}
			continue
		}
		k := nestedKey.FindStringSubmatch(l)
		if !inMeta || k == nil {
			continue
		}
		if metaIndent == "" {
			metaIndent = k[1]
		}
		if k[1] == metaIndent && !slices.Contains(allowedObserved, "metadata."+k[2]) {
			return &LineError{File: file, Line: first + i + 1, Err: &ObservedFieldsError{Field: "metadata." + k[2]}}
		}
	}
	return nil
}

// literal returns a YAML scalar's value, without quotes or a comment, or
// "" when a template action computes it.
func literal(v string) string {
	if strings.Contains(v, "{{") {
		return ""
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return v
}

// isBlank reports whether a document holds nothing but blank lines,
// comments and template actions alone on their lines: no field.
func isBlank(lines []string) bool {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") && !(strings.HasPrefix(t, "{{") && strings.HasSuffix(t, "}}")) {
			return false
		}
	}
	return true
}
