package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// Helm's values.schema.json validation loads what a schema points to: a
// $ref to http(s) is fetched over the network, one to a relative or file
// path is read from the disk, and an unknown $schema is fetched too. In
// an operator that would let whoever writes a chart make Loom's pod send
// requests (to a cloud's metadata endpoint, say) or read its files, on
// every render. So a chart's schemas may point only inside themselves:
// $ref, $dynamicRef and $recursiveRef must be fragments (#...), and
// $schema one of the JSON Schema drafts the validator knows.

// knownDrafts are the $schema values the validator has built in.
var knownDrafts = []string{
	"json-schema.org/draft-04/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-07/schema",
	"json-schema.org/draft/2019-09/schema", "json-schema.org/draft/2020-12/schema",
}

// checkSchemas refuses a chart, or a subchart, whose values.schema.json
// points outside itself.
// An error is an *Error naming the schema by Helm's path, with the line
// and column of a syntax error.
func checkSchemas(ch *chartv2.Chart) error {
	if len(ch.Schema) > 0 {
		file := ch.ChartFullPath() + "/values.schema.json"
		var doc any
		if err := json.Unmarshal(ch.Schema, &doc); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				// Offset is past the byte that failed.
				line, col := lineCol(ch.Schema, int(syn.Offset)-1)
				return &Error{File: file, Line: line, Err: fmt.Errorf("column %d: %w", col, err)}
			}
			return &Error{File: file, Err: err}
		}
		if err := checkRefs(doc, ""); err != nil {
			return &Error{File: file, Err: err}
		}
	}
	for _, d := range ch.Dependencies() {
		if err := checkSchemas(d); err != nil {
			return err
		}
	}
	return nil
}

func checkRefs(v any, at string) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := at + "/" + k
			if s, ok := e.(string); ok {
				switch k {
				case "$ref", "$dynamicRef", "$recursiveRef":
					if !strings.HasPrefix(s, "#") {
						return fmt.Errorf("%s is %q: Loom never fetches nor reads a schema; put what it points to in this file, under $defs, and point to #/$defs/...", p, s)
					}
				case "$schema":
					if !knownDraft(s) {
						return fmt.Errorf("%s is %q, which is not a JSON Schema draft (04, 06, 07, 2019-09, 2020-12): Loom never fetches a schema", p, s)
					}
				}
			}
			if err := checkRefs(e, p); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := checkRefs(e, fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func knownDraft(s string) bool {
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "#")
	for _, d := range knownDrafts {
		if s == d {
			return true
		}
	}
	return false
}

// lineCol is the 1-based line and column of byte offset off in b; an
// offset past the end is the end.
func lineCol(b []byte, off int) (line, col int) {
	off = min(max(off, 0), len(b))
	before := b[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}
