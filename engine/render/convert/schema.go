package convert

import (
	"errors"
	"fmt"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// MoveError is a move whose path a version's schema cannot hold, or
// holds with a type the move cannot read or write: a broken move, refused
// when the set loads.
type MoveError struct {
	// Field is the move's field in loom.yaml, e.g.
	// versions[0].conversion.moves[1].rename.to.
	Field string
	// Path is the path it names.
	Path string
	// Version is the version whose schema lacks it.
	Version string
	// Type is the path's type in that schema when the move needs a
	// string there (a split's or join's part), "" when the path is absent.
	Type string
}

// Error says which path which version lacks, or has of another type.
func (e *MoveError) Error() string {
	if e.Type != "" {
		return fmt.Sprintf("%s %q: is of type %s in the schema of %s, but a split or a join needs a string", e.Field, e.Path, e.Type, e.Version)
	}
	return fmt.Sprintf("%s %q: the schema of %s has no such field", e.Field, e.Path, e.Version)
}

// MovePath returns the path of a *MoveError in err's chain, or "".
func MovePath(err error) string {
	var me *MoveError
	if errors.As(err, &me) {
		return me.Path
	}
	return ""
}

// checkMoves checks every path of version v's moves (the i-th version in
// loom.yaml): each from-path against v's schema, each to-path against the
// hub's.
func checkMoves(i int, v, hub *version) error {
	for j, m := range v.conv.Moves {
		at := fmt.Sprintf("versions[%d].conversion.moves[%d]", i, j)
		type check struct {
			field, path string
			in          *version
			str         bool // a part of a split or join: a string
		}
		var checks []check
		switch {
		case m.Rename != nil:
			checks = []check{{"rename.from", m.Rename.From, v, false}, {"rename.to", m.Rename.To, hub, false}}
		case m.Split != nil:
			checks = []check{{"split.from", m.Split.From, v, true}}
			for k, p := range m.Split.Into {
				checks = append(checks, check{fmt.Sprintf("split.into[%d]", k), p, hub, true})
			}
		case m.Join != nil:
			for k, p := range m.Join.From {
				checks = append(checks, check{fmt.Sprintf("join.from[%d]", k), p, v, true})
			}
			checks = append(checks, check{"join.to", m.Join.To, hub, true})
		case m.Default != nil:
			checks = []check{{"default.path", m.Default.Path, hub, false}}
		}
		for _, c := range checks {
			s, ok := schemaAt(c.in.schema, c.path)
			switch {
			case !ok:
				return &MoveError{Field: at + "." + c.field, Path: c.path, Version: c.in.name}
			case c.str && s != nil && s.Type != "string" && s.Type != "":
				return &MoveError{Field: at + "." + c.field, Path: c.path, Version: c.in.name, Type: s.Type}
			}
		}
	}
	return nil
}

// schemaAt returns the schema of the field at the dotted path, and
// whether the schema has it: each step a property, or below a free-form
// object or map. Below a free-form object the field's schema is nil.
func schemaAt(s *structuralschema.Structural, path string) (*structuralschema.Structural, bool) {
	for _, f := range strings.Split(path, ".") {
		if s == nil {
			return nil, false
		}
		if p, ok := s.Properties[f]; ok {
			s = &p
			continue
		}
		if s.XPreserveUnknownFields {
			return nil, true
		}
		if s.AdditionalProperties != nil {
			if s.AdditionalProperties.Bool {
				return nil, true
			}
			s = s.AdditionalProperties.Structural
			continue
		}
		return nil, false
	}
	return s, s != nil
}
