package crd

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// markerNames are the compact form's markers, for "did you mean".
var markerNames = []string{
	"required", "default", "description", "enum", "minimum", "maximum",
	"pattern", "minLength", "maxLength", "minItems", "maxItems",
	"minProperties", "maxProperties", "format", "immutable", "validation", "message",
}

// kindOf is what a schema holds, as the markers see it: string, integer,
// number, boolean, array, map (additionalProperties) or object.
func kindOf(p *apiextv1.JSONSchemaProps) string {
	if p.Type == "object" && p.AdditionalProperties != nil {
		return "map"
	}
	return p.Type
}

// markerKinds lists, for each marker limited to some kinds, those kinds.
var markerKinds = map[string][]string{
	"enum":          {"string", "integer", "number"},
	"minimum":       {"integer", "number"},
	"maximum":       {"integer", "number"},
	"pattern":       {"string"},
	"minLength":     {"string"},
	"maxLength":     {"string"},
	"minItems":      {"array"},
	"maxItems":      {"array"},
	"minProperties": {"object", "map"},
	"maxProperties": {"object", "map"},
	"format":        {"string", "integer", "number"},
}

// applyMarkers sets each marker on f. name is the field's name, for the
// immutable rule's message.
func applyMarkers(f *compactField, name string, ms []marker) error {
	p := &f.props
	seen := map[string]bool{}
	for _, m := range ms {
		if !slices.Contains(markerNames, m.name) {
			return fmt.Errorf("unknown marker %q%s", m.name, suggest(m.name, markerNames))
		}
		if seen[m.name] && m.name != "validation" && m.name != "message" {
			return fmt.Errorf("marker %s given twice", m.name)
		}
		seen[m.name] = true
		if kinds, ok := markerKinds[m.name]; ok && !slices.Contains(kinds, kindOf(p)) {
			return fmt.Errorf("marker %s applies to %s, not %s", m.name, strings.Join(kinds, " and "), kindOf(p))
		}
		if err := applyMarker(f, name, m); err != nil {
			return fmt.Errorf("marker %s: %w", m.name, err)
		}
	}
	if err := checkBounds(p); err != nil {
		return err
	}
	if p.Default != nil {
		if err := checkDefault(*p); err != nil {
			return fmt.Errorf("marker default: %w", err)
		}
	}
	return nil
}

// applyMarker sets one marker on f.
func applyMarker(f *compactField, name string, m marker) error {
	p := &f.props
	var err error
	switch m.name {
	case "required":
		f.required, err = parseBool(m.value)
	case "description":
		p.Description = m.value
	case "default":
		p.Default, err = parseValue(p, m.value)
	case "enum":
		for _, v := range strings.Split(m.value, ",") {
			j, err := parseValue(p, strings.TrimSpace(v))
			if err != nil {
				return err
			}
			p.Enum = append(p.Enum, *j)
		}
	case "minimum":
		p.Minimum, err = parseNumber(p, m.value)
	case "maximum":
		p.Maximum, err = parseNumber(p, m.value)
	case "pattern":
		if _, err := regexp.Compile(m.value); err != nil {
			return err
		}
		p.Pattern = m.value
	case "minLength":
		p.MinLength, err = parseCount(m.value)
	case "maxLength":
		p.MaxLength, err = parseCount(m.value)
	case "minItems":
		p.MinItems, err = parseCount(m.value)
	case "maxItems":
		p.MaxItems, err = parseCount(m.value)
	case "minProperties":
		p.MinProperties, err = parseCount(m.value)
	case "maxProperties":
		p.MaxProperties, err = parseCount(m.value)
	case "format":
		err = setFormat(p, m.value)
	case "immutable":
		var on bool
		if on, err = parseBool(m.value); on {
			p.XValidations = append(p.XValidations, apiextv1.ValidationRule{Rule: "self == oldSelf", Message: name + " is immutable"})
		}
	case "validation":
		if strings.TrimSpace(m.value) == "" {
			return errors.New("an empty rule")
		}
		p.XValidations = append(p.XValidations, apiextv1.ValidationRule{Rule: m.value})
	case "message":
		n := len(p.XValidations)
		if n == 0 || p.XValidations[n-1].Message != "" {
			return errors.New(`a message follows the validation it belongs to: validation="rule" message="text"`)
		}
		if strings.ContainsAny(m.value, "\r\n") || strings.TrimSpace(m.value) == "" {
			return errors.New("a message is one non-empty line")
		}
		p.XValidations[n-1].Message = m.value
	}
	return err
}

// parseBool is true or false.
func parseBool(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither true nor false", s)
}

// parseCount is a non-negative integer (a length or a count).
func parseCount(s string) (*int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%q is not a non-negative integer", s)
	}
	return &n, nil
}

// parseNumber is a bound of an integer or number field.
func parseNumber(p *apiextv1.JSONSchemaProps, s string) (*float64, error) {
	if p.Type == "integer" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		f := float64(n)
		return &f, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("%q is not a number", s)
	}
	return &f, nil
}

// formats lists the formats an integer or number field may have.
var formats = map[string][]string{"integer": {"int32", "int64"}, "number": {"float", "double"}}

// setFormat sets an OpenAPI format: int32 or int64 on an integer, float
// or double on a number, any on a string (the API server knows date-time,
// date, duration, byte, uuid and others, and ignores the rest).
func setFormat(p *apiextv1.JSONSchemaProps, s string) error {
	if allowed, ok := formats[p.Type]; ok && !slices.Contains(allowed, s) {
		return fmt.Errorf("%q: an %s's format is %s", s, p.Type, strings.Join(allowed, " or "))
	}
	p.Format = s
	return nil
}

// parseValue reads a default or enum value as the field's type: an
// integer default is a JSON number, a string stays as written, a list or
// object is YAML or JSON ([a, b], {k: v}).
func parseValue(p *apiextv1.JSONSchemaProps, s string) (*apiextv1.JSON, error) {
	var v any
	switch kindOf(p) {
	case "string":
		v = s
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		v = n
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		v = f
	case "boolean":
		b, err := parseBool(s)
		if err != nil {
			return nil, err
		}
		v = b
	default:
		if err := yaml.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		_, isList := v.([]any)
		_, isMap := v.(map[string]any)
		if (p.Type == "array" && !isList) || (p.Type == "object" && !isMap) {
			return nil, fmt.Errorf("%q is not a%s", s, map[bool]string{true: " list", false: "n object"}[p.Type == "array"])
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &apiextv1.JSON{Raw: raw}, nil
}

// checkBounds refuses a minimum above its maximum.
func checkBounds(p *apiextv1.JSONSchemaProps) error {
	if p.Minimum != nil && p.Maximum != nil && *p.Minimum > *p.Maximum {
		return fmt.Errorf("minimum %v is above maximum %v", *p.Minimum, *p.Maximum)
	}
	for _, b := range []struct {
		name     string
		min, max *int64
	}{{"Length", p.MinLength, p.MaxLength}, {"Items", p.MinItems, p.MaxItems}, {"Properties", p.MinProperties, p.MaxProperties}} {
		if b.min != nil && b.max != nil && *b.min > *b.max {
			return fmt.Errorf("min%s %d is above max%s %d", b.name, *b.min, b.name, *b.max)
		}
	}
	return nil
}

// checkDefault refuses a default that the field's own markers refuse, so
// that the mistake is found when the set loads and not when the CRD is
// installed (the API server checks the rest: nested values, CEL rules).
func checkDefault(p apiextv1.JSONSchemaProps) error {
	var v any
	if err := json.Unmarshal(p.Default.Raw, &v); err != nil {
		return err
	}
	if len(p.Enum) > 0 && !slices.ContainsFunc(p.Enum, func(e apiextv1.JSON) bool { return string(e.Raw) == string(p.Default.Raw) }) {
		return fmt.Errorf("%s is not in the enum", p.Default.Raw)
	}
	switch v := v.(type) {
	case float64:
		if p.Minimum != nil && v < *p.Minimum {
			return fmt.Errorf("%s is below the minimum %v", p.Default.Raw, *p.Minimum)
		}
		if p.Maximum != nil && v > *p.Maximum {
			return fmt.Errorf("%s is above the maximum %v", p.Default.Raw, *p.Maximum)
		}
	case string:
		return checkLength(p, v, int64(len([]rune(v))))
	case []any:
		if p.MinItems != nil && int64(len(v)) < *p.MinItems || p.MaxItems != nil && int64(len(v)) > *p.MaxItems {
			return fmt.Errorf("%s has %d items, outside minItems/maxItems", p.Default.Raw, len(v))
		}
	case map[string]any:
		if p.MinProperties != nil && int64(len(v)) < *p.MinProperties || p.MaxProperties != nil && int64(len(v)) > *p.MaxProperties {
			return fmt.Errorf("%s has %d properties, outside minProperties/maxProperties", p.Default.Raw, len(v))
		}
	}
	return nil
}

// checkLength checks a string default against its length and pattern.
func checkLength(p apiextv1.JSONSchemaProps, v string, n int64) error {
	if p.MinLength != nil && n < *p.MinLength {
		return fmt.Errorf("%q is shorter than minLength %d", v, *p.MinLength)
	}
	if p.MaxLength != nil && n > *p.MaxLength {
		return fmt.Errorf("%q is longer than maxLength %d", v, *p.MaxLength)
	}
	if p.Pattern != "" && !regexp.MustCompile(p.Pattern).MatchString(v) {
		return fmt.Errorf("%q does not match the pattern %s", v, p.Pattern)
	}
	return nil
}
