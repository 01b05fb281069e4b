package crd

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// loomColumns are the printer columns of every parent, before the set's.
func loomColumns() []apiextv1.CustomResourceColumnDefinition {
	return []apiextv1.CustomResourceColumnDefinition{
		{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
		{Name: "State", Type: "string", JSONPath: ".status.state"},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
}

// printerColumns are Loom's columns then the set's, each of whose
// JSONPath must lead to a field of the schema (or of Loom's status).
func printerColumns(given []apiextv1.CustomResourceColumnDefinition, schema *apiextv1.JSONSchemaProps) ([]apiextv1.CustomResourceColumnDefinition, error) {
	cols := loomColumns()
	for i, c := range given {
		if slices.ContainsFunc(cols, func(o apiextv1.CustomResourceColumnDefinition) bool { return o.Name == c.Name }) {
			return nil, fmt.Errorf("parent.printerColumns[%d] (%s): a column of this name is already there", i, c.Name)
		}
		if err := checkPath(c.JSONPath, schema); err != nil {
			return nil, &columnError{prefix: fmt.Sprintf("parent.printerColumns[%d] (%s)", i, c.Name), err: err}
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// checkPath says whether a printer column's JSONPath (.spec.a.b,
// .status.conditions[?(@.type=="Ready")].message, .spec.list[0]) leads to
// a field the schema can hold. Fields under metadata, free-form objects
// and maps are not checked.
func checkPath(path string, schema *apiextv1.JSONSchemaProps) error {
	if !strings.HasPrefix(path, ".") {
		return fmt.Errorf("jsonPath %q must start with a dot", path)
	}
	segs, err := splitPath(path)
	if err != nil {
		return fmt.Errorf("jsonPath %q: %w", path, err)
	}
	if len(segs) > 0 && (segs[0] == "metadata" || segs[0] == "apiVersion" || segs[0] == "kind") {
		return nil
	}
	cur := schema
	for i, s := range segs {
		switch {
		case cur.XPreserveUnknownFields != nil && *cur.XPreserveUnknownFields:
			return nil
		case s == "[]":
			if cur.Items == nil || cur.Items.Schema == nil {
				return fmt.Errorf("jsonPath %q: %s is not a list", path, "."+strings.Join(segs[:i], "."))
			}
			cur = cur.Items.Schema
		case cur.AdditionalProperties != nil && cur.AdditionalProperties.Schema != nil:
			cur = cur.AdditionalProperties.Schema
		default:
			next, ok := cur.Properties[s]
			if !ok {
				return fmt.Errorf("jsonPath %q: %s is not in the schema%s", path, s, suggest(s, propNames(cur)))
			}
			cur = &next
		}
	}
	return nil
}

// splitPath splits a JSONPath into field names and "[]" for each
// subscript or filter.
func splitPath(path string) ([]string, error) {
	var segs []string
	for i := 0; i < len(path); {
		switch path[i] {
		case '.':
			i++
		case '[':
			depth, j := 0, i
			for ; j < len(path); j++ {
				if path[j] == '[' {
					depth++
				} else if path[j] == ']' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if j == len(path) {
				return nil, fmt.Errorf("unclosed [")
			}
			segs = append(segs, "[]")
			i = j + 1
		default:
			j := i
			for j < len(path) && path[j] != '.' && path[j] != '[' {
				j++
			}
			segs = append(segs, path[i:j])
			i = j
		}
	}
	return segs, nil
}

func propNames(p *apiextv1.JSONSchemaProps) []string {
	names := make([]string, 0, len(p.Properties))
	for n := range p.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
