package convert

import (
	"errors"
	"fmt"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// MoveError is a move whose path a version's schema cannot hold: a
// broken move, refused when the set loads.
type MoveError struct {
	// Field is the move's field in loom.yaml, e.g.
	// versions[0].conversion.moves[1].rename.to.
	Field string
	// Path is the path it names.
	Path string
	// Version is the version whose schema lacks it.
	Version string
}

// Error says which path which version lacks.
func (e *MoveError) Error() string {
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
		}
		var checks []check
		switch {
		case m.Rename != nil:
			checks = []check{{"rename.from", m.Rename.From, v}, {"rename.to", m.Rename.To, hub}}
		case m.Split != nil:
			checks = []check{{"split.from", m.Split.From, v}}
			for k, p := range m.Split.Into {
				checks = append(checks, check{fmt.Sprintf("split.into[%d]", k), p, hub})
			}
		case m.Join != nil:
			for k, p := range m.Join.From {
				checks = append(checks, check{fmt.Sprintf("join.from[%d]", k), p, v})
			}
			checks = append(checks, check{"join.to", m.Join.To, hub})
		case m.Default != nil:
			checks = []check{{"default.path", m.Default.Path, hub}}
		}
		for _, c := range checks {
			if !canHold(c.in.schema, c.path) {
				return &MoveError{Field: at + "." + c.field, Path: c.path, Version: c.in.name}
			}
		}
	}
	return nil
}

// canHold reports whether a schema has a field at the dotted path: each
// step a property, or below a free-form object or map.
func canHold(s *structuralschema.Structural, path string) bool {
	for _, f := range strings.Split(path, ".") {
		if s == nil {
			return false
		}
		if p, ok := s.Properties[f]; ok {
			s = &p
			continue
		}
		if s.XPreserveUnknownFields {
			return true
		}
		if s.AdditionalProperties != nil {
			if s.AdditionalProperties.Bool {
				return true
			}
			s = s.AdditionalProperties.Structural
			continue
		}
		return false
	}
	return s != nil
}
