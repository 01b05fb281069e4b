package object

import (
	"fmt"
	"strings"
)

// ParseFieldPath splits a field path of AnnotationDriftIgnore, such as
// "spec.replicas" or "metadata.annotations.example\.com/owner", into the
// names of the fields it goes through: dots separate them, and `\.` is a
// dot inside a name. A path names fields of maps only: it cannot go into
// a list (name the list's field instead).
func ParseFieldPath(p string) ([]string, error) {
	if strings.TrimSpace(p) != p || p == "" {
		return nil, fmt.Errorf("%q is not a field path such as spec.replicas", p)
	}
	if strings.ContainsAny(p, "[]") {
		return nil, fmt.Errorf("%q goes into a list, which a drift-ignore path cannot: name the list's field, such as spec.template.spec.containers", p)
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p) && p[i+1] == '.':
			cur.WriteByte('.')
			i++
		case p[i] == '.':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(p[i])
		}
	}
	out = append(out, cur.String())
	for _, name := range out {
		if name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("%q is not a field path such as spec.replicas", p)
		}
	}
	return out, nil
}

// FormatFieldPath is ParseFieldPath's inverse: the names joined with dots,
// a dot inside a name escaped.
func FormatFieldPath(names []string) string {
	esc := make([]string, len(names))
	for i, n := range names {
		esc[i] = strings.ReplaceAll(n, ".", `\.`)
	}
	return strings.Join(esc, ".")
}

// DriftIgnoreOf returns the field paths of a child's
// AnnotationDriftIgnore, each trimmed, empty ones left out.
func DriftIgnoreOf(annotations map[string]string) []string {
	var out []string
	for _, p := range strings.Split(annotations[AnnotationDriftIgnore], ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
