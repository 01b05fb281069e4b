package crd

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/loom-operator/loom/engine/config"
)

// SelfKey, in a nested object of the compact form, holds the object's own
// line: `$self: object | required=true description="..."`. Without it a
// nested object is optional and undescribed.
const SelfKey = "$self"

// compileObject compiles a map of compact fields (loom.yaml's schema.spec,
// schema.status, or a nested object in them) into an object schema. path
// names the map in errors, e.g. "schema.spec". It also returns whether the
// object's $self line makes it required.
func compileObject(path string, fields map[string]any) (apiextv1.JSONSchemaProps, bool, error) {
	obj := apiextv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{}}
	required := false
	if self, ok := fields[SelfKey]; ok {
		line, ok := self.(string)
		if !ok {
			return obj, false, fmt.Errorf("%s.%s: want a line \"object | markers\", got %s", path, SelfKey, describe(self))
		}
		f, err := compileLine(path, line)
		if err != nil {
			return obj, false, err
		}
		if f.props.Type != "object" || f.props.AdditionalProperties != nil {
			return obj, false, fmt.Errorf("%s.%s: the type must be object, not %q", path, SelfKey, typeOf(line))
		}
		obj, required = f.props, f.required
		obj.XPreserveUnknownFields = nil
		obj.Properties = map[string]apiextv1.JSONSchemaProps{}
	}
	for _, name := range sortedKeys(fields) {
		if name == SelfKey {
			continue
		}
		p, req, err := compileValue(path+"."+name, fields[name])
		if err != nil {
			return obj, false, err
		}
		obj.Properties[name] = p
		if req {
			obj.Required = append(obj.Required, name)
		}
	}
	if len(obj.Properties) == 0 {
		return obj, false, fmt.Errorf("%s: a nested object needs at least one field (use `object` for a free-form one)", path)
	}
	return obj, required, nil
}

// compileValue compiles one field: a line, a nested object (a map), or a
// list of objects (a list holding one map: the items' fields).
func compileValue(path string, v any) (apiextv1.JSONSchemaProps, bool, error) {
	switch v := v.(type) {
	case string:
		f, err := compileLine(path, v)
		return f.props, f.required, err
	case map[string]any:
		return compileObject(path, v)
	case []any:
		if len(v) != 1 {
			return apiextv1.JSONSchemaProps{}, false, fmt.Errorf("%s: a list of objects holds exactly one map (the items' fields), not %d entries", path, len(v))
		}
		m, ok := v[0].(map[string]any)
		if !ok {
			return apiextv1.JSONSchemaProps{}, false, fmt.Errorf("%s: a list of objects holds one map of the items' fields, got %s (for a list of scalars write \"[]string\")", path, describe(v[0]))
		}
		items, _, err := compileObject(path+"[]", m)
		if err != nil {
			return apiextv1.JSONSchemaProps{}, false, err
		}
		return apiextv1.JSONSchemaProps{Type: "array", Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &items}}, false, nil
	default:
		return apiextv1.JSONSchemaProps{}, false, fmt.Errorf("%s: want a line \"type | markers\" or a map of fields, got %s", path, describe(v))
	}
}

// compactField is one compiled line.
type compactField struct {
	props    apiextv1.JSONSchemaProps
	required bool
}

// compileLine compiles a line "type | marker=value ...". Errors name the
// field's path and quote the line.
func compileLine(path, line string) (compactField, error) {
	typ, markers, _ := strings.Cut(line, "|")
	props, err := parseType(strings.TrimSpace(typ))
	if err != nil {
		return compactField{}, fmt.Errorf("%s: %w in %q", path, err, line)
	}
	ms, err := tokenize(markers)
	if err != nil {
		return compactField{}, fmt.Errorf("%s: %w in %q", path, err, line)
	}
	f := compactField{props: props}
	if err := applyMarkers(&f, lastSegment(path), ms); err != nil {
		return compactField{}, fmt.Errorf("%s: %w in %q", path, err, line)
	}
	return f, nil
}

// scalarTypes are the compact form's type names besides lists and maps.
var scalarTypes = []string{"string", "integer", "number", "boolean", "object"}

// parseType turns a type ("integer", "[]string", "map[string][]integer")
// into its schema. `object` is free-form: it keeps unknown fields.
func parseType(t string) (apiextv1.JSONSchemaProps, error) {
	switch {
	case t == "":
		return apiextv1.JSONSchemaProps{}, fmt.Errorf("missing type")
	case strings.HasPrefix(t, "[]"):
		items, err := parseType(t[2:])
		if err != nil {
			return items, err
		}
		return apiextv1.JSONSchemaProps{Type: "array", Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &items}}, nil
	case strings.HasPrefix(t, "map["):
		key, elem, ok := strings.Cut(t[len("map["):], "]")
		if !ok || key != "string" {
			return apiextv1.JSONSchemaProps{}, fmt.Errorf("type %q: a map's keys are strings: map[string]T", t)
		}
		vals, err := parseType(elem)
		if err != nil {
			return vals, err
		}
		return apiextv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextv1.JSONSchemaPropsOrBool{Allows: true, Schema: &vals}}, nil
	case t == "object":
		yes := true
		return apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}, nil
	}
	for _, s := range scalarTypes {
		if t == s {
			return apiextv1.JSONSchemaProps{Type: t}, nil
		}
	}
	return apiextv1.JSONSchemaProps{}, fmt.Errorf("unknown type %q%s", t, suggest(t, append(scalarTypes, "[]", "map[string]")))
}

// marker is one "name=value" of a line; a bare name has the value "true".
type marker struct {
	name, value string
}

// tokenize splits a line's markers: name=value, name="quoted value" (\"
// stands for a quote inside), or a bare name (true).
func tokenize(s string) ([]marker, error) {
	var out []marker
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return out, nil
		}
		start := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		name := s[start:i]
		if i == len(s) || s[i] != '=' {
			out = append(out, marker{name: name, value: "true"})
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("a marker without a name at %q", s[start:])
		}
		i++ // '='
		if i < len(s) && s[i] == '"' {
			v, n, err := unquote(s[i:])
			if err != nil {
				return nil, fmt.Errorf("marker %s: %w", name, err)
			}
			out = append(out, marker{name: name, value: v})
			i += n
			if i < len(s) && !isSpace(s[i]) {
				return nil, fmt.Errorf("marker %s: a space must follow the closing quote", name)
			}
			continue
		}
		vs := i
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		if vs == i {
			return nil, fmt.Errorf("marker %s has no value (write %s=\"\" for an empty one)", name, name)
		}
		out = append(out, marker{name: name, value: s[vs:i]})
	}
}

// unquote reads a double-quoted value at the start of s, where \" is a
// quote and every other backslash is itself (regular expressions keep
// theirs). It returns the value and how many bytes it spanned.
func unquote(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
			b.WriteByte('"')
			i++
		case s[i] == '"':
			return b.String(), i + 1, nil
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, fmt.Errorf("unterminated quote")
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// typeOf is the type part of a line, for messages.
func typeOf(line string) string {
	t, _, _ := strings.Cut(line, "|")
	return strings.TrimSpace(t)
}

// lastSegment is a path's last field name: "replicas" of
// "schema.spec.replicas".
func lastSegment(path string) string {
	return path[strings.LastIndex(path, ".")+1:]
}

// describe names a YAML value's kind for messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// suggest is " (did you mean X?)" for the candidate nearest to s, when it
// is near enough to be a typo (config.Suggest), or "".
func suggest(s string, candidates []string) string {
	if best := config.Suggest(s, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return ""
}
