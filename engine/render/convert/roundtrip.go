package convert

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RoundTripError is a parent that a trip through another version changes.
type RoundTripError struct {
	// From is the parent's version, Via the one it went through.
	From, Via string
	// Paths are the fields at fault, sorted.
	Paths []string
	// Lossy is true when the trip is exact only thanks to DataAnnotation,
	// though Via's schema has those fields: the conversion drops what Via
	// could hold, so a parent read in Via lacks them. When false, the
	// parent does not come back the same even with the annotation.
	Lossy bool
}

// Error names the trip and the paths.
func (e *RoundTripError) Error() string {
	if e.Lossy {
		return fmt.Sprintf("%s → %s → %s: the conversion loses %s, which %s can hold (only %s keeps them): a conversion to %s should carry them",
			e.From, e.Via, e.From, strings.Join(e.Paths, ", "), e.Via, DataAnnotation, e.Via)
	}
	return fmt.Sprintf("%s → %s → %s changes %s", e.From, e.Via, e.From, strings.Join(e.Paths, ", "))
}

// RoundTrip converts obj to every other version the set serves and back,
// and returns a *RoundTripError (joined, one per version) for each trip
// that does not give obj back, or that gives it back only through
// DataAnnotation although the other version's schema has the fields.
func (c *Converter) RoundTrip(obj *unstructured.Unstructured) error {
	from, err := c.versionOf(obj)
	if err != nil {
		return err
	}
	// As the API server stores it: without what its own version cannot hold.
	want := withoutData(obj.Object)
	structuralpruning.Prune(want, c.versions[from].schema, true)
	var errs []error
	for _, via := range c.names {
		if via == from {
			continue
		}
		if err := c.roundTrip(obj, want, from, via); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// roundTrip checks one trip, from → via → from.
func (c *Converter) roundTrip(obj *unstructured.Unstructured, want map[string]any, from, via string) error {
	out, err := c.Convert(obj, via)
	if err != nil {
		return err
	}
	back, err := c.Convert(out, from)
	if err != nil {
		return fmt.Errorf("%s → %s → %s: %w", from, via, from, err)
	}
	if d, _ := diff(want, withoutData(back.Object)); len(d) > 0 {
		return &RoundTripError{From: from, Via: via, Paths: paths("", d)}
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), Timeout, fmt.Errorf("%w: %s", ErrTimeout, Timeout))
	defer cancel()
	raw, err := c.raw(ctx, withoutData(out.Object), via, from)
	if err != nil {
		return fmt.Errorf("%s → %s → %s: %w", from, via, from, err)
	}
	var lost []string
	held(c.versions[via].schema, body(want), body(raw), "", &lost)
	if len(lost) > 0 {
		sort.Strings(lost)
		return &RoundTripError{From: from, Via: via, Paths: lost, Lossy: true}
	}
	return nil
}

// held adds to lost each path where got differs from want that schema s
// (the other version's) can hold: a field lost by the conversion, not by
// the other version's limits. Objects are walked by field, lists of equal
// length by item.
func held(s *structuralschema.Structural, want, got any, path string, lost *[]string) {
	if s == nil {
		return
	}
	if s.XPreserveUnknownFields && len(s.Properties) == 0 {
		if !equality.Semantic.DeepEqual(want, got) {
			*lost = append(*lost, path)
		}
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*lost = append(*lost, path)
			return
		}
		for k, wv := range w {
			sub := fieldSchema(s, k)
			if sub == nil || !fits(sub, wv) {
				continue // the other version cannot hold it
			}
			p := k
			if path != "" {
				p = path + "." + k
			}
			gv, ok := g[k]
			if !ok {
				*lost = append(*lost, p)
				continue
			}
			held(sub, wv, gv, p, lost)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) || s.Items == nil {
			if !equality.Semantic.DeepEqual(want, got) {
				*lost = append(*lost, path)
			}
			return
		}
		for i := range w {
			held(s.Items, w[i], g[i], fmt.Sprintf("%s[%d]", path, i), lost)
		}
	default:
		if !equality.Semantic.DeepEqual(want, got) {
			*lost = append(*lost, path)
		}
	}
}

// fieldSchema is the schema of field k of an object schema s, or nil
// when s has no such field.
func fieldSchema(s *structuralschema.Structural, k string) *structuralschema.Structural {
	if p, ok := s.Properties[k]; ok {
		return &p
	}
	if s.AdditionalProperties != nil {
		if s.AdditionalProperties.Structural != nil {
			return s.AdditionalProperties.Structural
		}
		if s.AdditionalProperties.Bool {
			return &structuralschema.Structural{Extensions: structuralschema.Extensions{XPreserveUnknownFields: true}}
		}
	}
	if s.XPreserveUnknownFields {
		return &structuralschema.Structural{Extensions: structuralschema.Extensions{XPreserveUnknownFields: true}}
	}
	return nil
}

// fits reports whether a value is of a schema's type (any type fits an
// untyped schema: free-form, or int-or-string).
func fits(s *structuralschema.Structural, v any) bool {
	switch v.(type) {
	case map[string]any:
		return s.Type == "object" || s.Type == ""
	case []any:
		return s.Type == "array" || s.Type == ""
	case string:
		return s.Type == "string" || s.Type == ""
	case bool:
		return s.Type == "boolean" || s.Type == ""
	case int64:
		return s.Type == "integer" || s.Type == "number" || s.Type == ""
	case float64:
		return s.Type == "number" || s.Type == ""
	}
	return true
}
