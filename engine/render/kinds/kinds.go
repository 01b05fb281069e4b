// Package kinds finds the kinds a template set renders by reading its
// templates' text, without rendering them: each document's top-level
// apiVersion and kind lines. A set whose kinds cannot be known so (a kind
// that comes out of a template action) is refused at load.
package kinds

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// The kinds a set renders are scanned from its templates' text when the
// set loads (render.Load), so that every command refuses a set whose kinds
// cannot be known, at load: `loom rbac` needs them for its rules, and a
// set that `loom rbac` refuses must not render, test or run either.

// Kind is a kind that a set's templates render, and the place where a
// template names it.
type Kind struct {
	// GroupKind is the kind and its API group.
	schema.GroupKind
	// File and Line are where the template names the kind.
	File string
	Line int
}

// ComputedError is a document whose kind, or whose apiVersion for a kind
// that is not built into Kubernetes, comes out of a template action:
// what it renders cannot be known without rendering every possible spec.
type ComputedError struct {
	File, Field, Value string
	Line               int
	// Hint says what to do instead; by default, make the field literal
	// so that the kinds the set renders are known.
	Hint string
}

// Error is the message with the template's file and line.
func (e *ComputedError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason())
}

// Reason is the message without its location.
func (e *ComputedError) Reason() string {
	hint := e.Hint
	if hint == "" {
		hint = "make it literal, so that the kinds the set renders are known"
	}
	return fmt.Sprintf("%s is computed (%s): %s", e.Field, e.Value, hint)
}

// LineError is a template line whose apiVersion does not parse.
type LineError struct {
	File string
	Line int
	Err  error
}

// Error is the message with the template's file and line.
func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns the parse error.
func (e *LineError) Unwrap() error { return e.Err }

var (
	apiVersionLine = regexp.MustCompile(`^apiVersion:[ \t]*(.*)$`)
	kindLine       = regexp.MustCompile(`^kind:[ \t]*(.*)$`)
)

// field is one top-level apiVersion or kind line of a document.
type field struct {
	value string
	line  int
}

// ScanKinds returns the kinds named at the top level of every YAML
// document in texts (template sources by file name), in order of file and
// line, once each. A document's kind is paired with the apiVersion before
// it in the same document (or, failing that, the first after it); branches
// of an if that name two kinds in one document yield both. A built-in kind
// whose apiVersion is computed (Helm charts often pick it by
// .Capabilities) is resolved by its kind when one group serves it.
func ScanKinds(texts map[string][]byte) ([]Kind, error) {
	names := make([]string, 0, len(texts))
	for n := range texts {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Kind
	seen := map[schema.GroupKind]bool{}
	for _, name := range names {
		kinds, err := scanFile(name, texts[name])
		if err != nil {
			return nil, err
		}
		for _, k := range kinds {
			if !seen[k.GroupKind] {
				seen[k.GroupKind] = true
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// Occurrences is every document's kind that texts name, with the file and
// line that name it: ScanKinds without the deduplication, the documents
// whose kind is not known left out.
func Occurrences(texts map[string][]byte) []Kind {
	var out []Kind
	for name, text := range texts {
		kinds, _ := scanFile(name, text)
		out = append(out, kinds...)
	}
	return out
}

// Named is every kind that texts name literally (ScanKinds), the
// documents whose kind is computed left out.
func Named(texts map[string][]byte) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for name, text := range texts {
		kinds, _ := scanFile(name, text)
		for _, k := range kinds {
			out[k.GroupKind] = true
		}
	}
	return out
}

// scanFile returns the kinds one file names, and the error of the first
// document whose kind it cannot resolve (the others are still scanned).
func scanFile(name string, text []byte) ([]Kind, error) {
	var out []Kind
	var versions, kinds []field
	var first error
	flush := func() {
		for _, k := range kinds {
			av := pairVersion(versions, k.line)
			gk, err := resolve(name, av, k)
			if err != nil && first == nil {
				first = err
			}
			if err == nil && gk.Kind != "" {
				out = append(out, Kind{GroupKind: gk, File: name, Line: k.line})
			}
		}
		versions, kinds = versions[:0], kinds[:0]
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), len(text)+1)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "---"):
			flush()
		case apiVersionLine.MatchString(line):
			versions = append(versions, field{value: scalar(apiVersionLine.FindStringSubmatch(line)[1]), line: n})
		case kindLine.MatchString(line):
			kinds = append(kinds, field{value: scalar(kindLine.FindStringSubmatch(line)[1]), line: n})
		}
	}
	flush()
	return out, first
}

// pairVersion is the apiVersion of the kind at line: the last one before
// it, else the first after it, else none.
func pairVersion(versions []field, line int) field {
	var best field
	for _, v := range versions {
		if v.line < line {
			best = v
		} else if best.line == 0 {
			return v
		}
	}
	return best
}

// scalar strips a YAML scalar's quotes and trailing comment.
func scalar(v string) string {
	v = strings.TrimSpace(v)
	if strings.Contains(v, "{{") {
		return v
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return strings.Trim(v, `"'`)
}

// resolve returns the group and kind of a document, or an empty
// GroupKind for a document that renders no object Loom applies (a List).
func resolve(file string, av, k field) (schema.GroupKind, error) {
	if strings.Contains(k.value, "{{") {
		return schema.GroupKind{}, &ComputedError{File: file, Line: k.line, Field: "kind", Value: k.value}
	}
	if k.value == "" || k.value == "List" {
		return schema.GroupKind{}, nil
	}
	if av.value != "" && !strings.Contains(av.value, "{{") {
		gv, err := schema.ParseGroupVersion(av.value)
		if err != nil {
			return schema.GroupKind{}, &LineError{File: file, Line: av.line, Err: fmt.Errorf("apiVersion %q: %w", av.value, err)}
		}
		return gv.WithKind(k.value).GroupKind(), nil
	}
	groups := builtinGroups(k.value)
	if len(groups) == 1 {
		return schema.GroupKind{Group: groups[0], Kind: k.value}, nil
	}
	line, value := av.line, av.value
	if line == 0 {
		line, value = k.line, "no apiVersion line"
	}
	if len(groups) > 1 {
		value += "; " + k.value + " is served by " + strings.Join(groups, ", ")
	}
	return schema.GroupKind{}, &ComputedError{File: file, Line: line, Field: "apiVersion", Value: value}
}

// retiredGroups are groups of client-go's scheme that no supported API
// server serves kinds of anymore.
var retiredGroups = []string{"extensions"}

// builtinGroups returns the groups of client-go's scheme that serve kind.
func builtinGroups(kind string) []string {
	var out []string
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Kind == kind && gvk.Version != "__internal" && !slices.Contains(retiredGroups, gvk.Group) && !slices.Contains(out, gvk.Group) {
			out = append(out, gvk.Group)
		}
	}
	sort.Strings(out)
	return out
}

// Builtin reports whether gvk is a kind built into Kubernetes
// (client-go's scheme), which no CRD of Loom's serves.
func Builtin(gvk schema.GroupVersionKind) bool {
	return scheme.Scheme.Recognizes(gvk)
}
