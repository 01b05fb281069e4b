package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/loom-operator/loom/internal/suggest"
	goyaml "sigs.k8s.io/yaml/goyaml.v3"
)

// UnknownFieldError is a key of loom.yaml that the set's configuration
// does not have, with where it is and the known key nearest to it.
type UnknownFieldError struct {
	// Path is the key's path, such as parent.shortname or
	// readiness[1].conditon.
	Path string
	// Line is the key's 1-based line in loom.yaml.
	Line int
	// Field is the key as written.
	Field string
	// Suggestion is the known key nearest to Field, or "" when none is
	// near enough to be a typo.
	Suggestion string
}

// Error names the path and the key, and suggests the nearest known key.
func (e *UnknownFieldError) Error() string {
	s := fmt.Sprintf("%s: unknown field %q", e.Path, e.Field)
	if e.Suggestion != "" {
		s += " (did you mean " + e.Suggestion + "?)"
	}
	return s
}

// unknownField finds the first key of raw that Config does not have, in
// the document's order, as a strict JSON decode would refuse it. It
// returns nil when it finds none (raw is not YAML, or the strict decode
// refused something else).
func unknownField(raw []byte) *UnknownFieldError {
	var doc goyaml.Node
	if err := goyaml.Unmarshal(raw, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	return walkUnknown(doc.Content[0], reflect.TypeFor[Config](), "")
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// walkUnknown walks n as the JSON decoder fills a value of type t.
func walkUnknown(n *goyaml.Node, t reflect.Type, path string) *UnknownFieldError {
	if n.Kind == goyaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil // decodes itself: its keys are its own business
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == goyaml.MappingNode:
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			ft, ok := fieldOf(fields, key.Value)
			p := join(path, key.Value)
			if !ok {
				names := make([]string, 0, len(fields))
				for name := range fields {
					names = append(names, name)
				}
				sort.Strings(names)
				return &UnknownFieldError{Path: p, Line: key.Line, Field: key.Value, Suggestion: Suggest(key.Value, names)}
			}
			if u := walkUnknown(n.Content[i+1], ft, p); u != nil {
				return u
			}
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == goyaml.SequenceNode:
		for i, c := range n.Content {
			if u := walkUnknown(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); u != nil {
				return u
			}
		}
	case t.Kind() == reflect.Map && n.Kind == goyaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if u := walkUnknown(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); u != nil {
				return u
			}
		}
	}
	return nil
}

// fieldOf finds key among fields as encoding/json does: the exact name,
// or else one that differs only in case.
func fieldOf(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if t, ok := fields[key]; ok {
		return t, true
	}
	for name, t := range fields {
		if strings.EqualFold(name, key) {
			return t, true
		}
	}
	return nil, false
}

// jsonFields are the JSON names of t's fields and their types, with the
// fields of embedded structs that have no name of their own.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "":
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, t := range jsonFields(ft) {
					fields[n] = t
				}
				continue
			}
		case !f.IsExported():
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Suggest is the candidate nearest to s (by edit distance, case aside),
// when it is near enough to be a typo of it, or "" (suggest.Nearest).
func Suggest(s string, candidates []string) string {
	return suggest.Nearest(s, candidates)
}
