package schemacheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/template/parse"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/loom-operator/loom/engine/render/deadline"
)

// field is the type of field name of v, reporting a field that v's schema
// cannot hold.
func (c *schemaChecker) field(sc *scope, v *value, name string, pos parse.Pos) *value {
	if v == nil {
		return nil
	}
	switch v.kind {
	case dataValue:
		return c.dataField(sc, v, name, pos)
	case parentValue:
		if name == "spec" {
			return &value{kind: schemaValue, schema: c.spec, path: ".Parent.spec"}
		}
		return nil
	}
	s, path := v.schema, v.path+"."+name
	if p, ok := s.Properties[name]; ok {
		return &value{kind: schemaValue, schema: &p, path: path}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Allows {
		if ap.Schema == nil {
			return nil
		}
		return &value{kind: schemaValue, schema: ap.Schema, path: path}
	}
	if freeForm(s) {
		return nil
	}
	kind := c.set.Kind
	switch s.Type {
	case "object", "":
		c.report(sc, pos, fmt.Sprintf("%s is not in the schema of %s%s", path, kind, suggest(name, propertyNames(s))))
	case "string", "integer", "number", "boolean", "array":
		c.report(sc, pos, fmt.Sprintf("%s is not in the schema of %s (%s is %s %s)", path, kind, v.path, article(s.Type), s.Type))
	}
	return nil
}

// freeForm reports whether a schema holds fields it does not name, or
// says too little to tell: preserve-unknown-fields, an object without
// properties, int-or-string, anyOf and the like.
func freeForm(s *apiextv1.JSONSchemaProps) bool {
	switch {
	case s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields,
		s.XIntOrString,
		len(s.AnyOf) > 0, len(s.OneOf) > 0, len(s.AllOf) > 0, s.Not != nil:
		return true
	case s.Type == "object" || s.Type == "":
		return len(s.Properties) == 0
	}
	return false
}

// dataFields are the template data's fields (templateData, with the
// child templates' Clusters); the status template's data has Children
// instead of Clusters.
var dataFields = []string{"Annotations", "Clusters", "Labels", "Name", "Namespace", "Parent", "Spec"}

// dataField is the type of a field of the template data. The data is a
// fixed map, so a field it does not have is reported: it reads nothing.
func (c *schemaChecker) dataField(sc *scope, v *value, name string, pos parse.Pos) *value {
	switch name {
	case "Spec":
		return &value{kind: schemaValue, schema: c.spec, path: ".Spec"}
	case "Parent":
		return &value{kind: parentValue}
	case "Annotations", "Labels", "Name", "Namespace":
		return nil
	case "Children":
		if !v.status {
			c.report(sc, pos, ".Children is not in the template data (it is only in the status template)")
		}
		return nil
	case "Clusters":
		if v.status {
			c.report(sc, pos, ".Clusters is not in the status template's data (only the child templates see it)")
		}
		return nil
	}
	names := dataFields
	if v.status {
		names = append([]string{"Children"}, slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "Clusters" })...)
	}
	c.report(sc, pos, fmt.Sprintf(".%s is not in the template data%s", name, suggest(name, names)))
	return nil
}

// report records a problem at pos in the current template's file.
func (c *schemaChecker) report(sc *scope, pos parse.Pos, msg string) {
	p := Problem{File: sc.file, Line: deadline.LineAt(c.set.Sources[sc.file], int(pos)), Msg: msg}
	c.found[p.String()] = p
}

func propertyNames(s *apiextv1.JSONSchemaProps) []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// suggest names the candidate closest to name, when one is close: at most
// one edit in three letters (a swap of two letters is one edit; case does
// not count).
func suggest(name string, candidates []string) string {
	best, bestDist := "", max(1, len(name)/3)+1
	for _, cand := range candidates {
		if d := editDistance(strings.ToLower(name), strings.ToLower(cand)); d < bestDist {
			best, bestDist = cand, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent letters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
