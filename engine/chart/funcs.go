package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
	goyaml "sigs.k8s.io/yaml/goyaml.v3"
)

// helmFuncs is the function map Helm 4 gives chart templates: sprig's,
// less env and expandenv, plus Helm's own. include, tpl, required, fail
// and lookup are bound per render (renderer.funcs); getHostByName
// answers "" as Helm's does without --enable-dns. Each function's result
// is Helm's; TestFuncsAgreeWithHelm holds them to Helm's engine.
func helmFuncs() template.FuncMap {
	m := sprig.TxtFuncMap()
	delete(m, "env")
	delete(m, "expandenv")
	for name, fn := range map[string]any{
		"toToml":        toTOML,
		"mustToToml":    mustToTOML,
		"fromToml":      fromTOML,
		"toYaml":        toYAML,
		"mustToYaml":    mustToYAML,
		"toYamlPretty":  toYAMLPretty,
		"fromYaml":      fromYAML,
		"fromYamlArray": fromYAMLArray,
		"toJson":        toJSON,
		"mustToJson":    mustToJSON,
		"fromJson":      fromJSON,
		"fromJsonArray": fromJSONArray,

		"mustToDuration":       mustToDuration,
		"durationSeconds":      func(v any) float64 { return durationOr0(v).Seconds() },
		"durationMilliseconds": func(v any) int64 { return durationOr0(v).Milliseconds() },
		"durationMicroseconds": func(v any) int64 { return durationOr0(v).Microseconds() },
		"durationNanoseconds":  func(v any) int64 { return durationOr0(v).Nanoseconds() },
		"durationMinutes":      func(v any) float64 { return durationOr0(v).Minutes() },
		"durationHours":        func(v any) float64 { return durationOr0(v).Hours() },
		"durationDays":         func(v any) float64 { return durationOr0(v).Hours() / 24.0 },
		"durationWeeks":        func(v any) float64 { return durationOr0(v).Hours() / 24.0 / 7.0 },
		"durationRoundTo":      func(v, m any) time.Duration { return durationTo(v, m, time.Duration.Round) },
		"durationTruncateTo":   func(v, m any) time.Duration { return durationTo(v, m, time.Duration.Truncate) },

		"getHostByName": func(string) string { return "" },
		// Stubs for the parser; a renderer binds the real ones.
		"include":  func(string, any) (string, error) { return "", errOutside },
		"tpl":      func(string, any) (string, error) { return "", errOutside },
		"required": func(string, any) (any, error) { return nil, errOutside },
		"fail":     func(string) (string, error) { return "", errOutside },
		"lookup":   func(string, string, string, string) (map[string]any, error) { return map[string]any{}, nil },
	} {
		m[name] = fn
	}
	return m
}

var errOutside = errors.New("called outside a render")

// toYAML is YAML without the final newline; "" when v cannot be marshalled.
func toYAML(v any) string {
	b, err := marshalYAML(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

func mustToYAML(v any) string {
	b, err := marshalYAML(v)
	if err != nil {
		panic(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// toYAMLPretty is YAML indented by 2, lists included.
func toYAMLPretty(v any) string {
	var b bytes.Buffer
	enc := goyaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// fromYAML parses a mapping; an error is the map's "Error" key.
func fromYAML(s string) map[string]any { return unmarshalYAMLMap(s) }

// fromYAMLArray parses a sequence; an error is its only item.
func fromYAMLArray(s string) []any {
	a := []any{}
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		a = []any{err.Error()}
	}
	return a
}

// toTOML is TOML, or the error's text.
func toTOML(v any) string {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(v); err != nil {
		return err.Error()
	}
	return b.String()
}

func mustToTOML(v any) string {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(v); err != nil {
		panic(err)
	}
	return b.String()
}

// fromTOML parses a TOML document; an error is the map's "Error" key.
func fromTOML(s string) map[string]any {
	m := map[string]any{}
	if err := toml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

// toJSON is compact JSON; "" when v cannot be marshalled.
func toJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func mustToJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// fromJSON parses a JSON object; an error is the map's "Error" key.
func fromJSON(s string) map[string]any {
	m := map[string]any{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

// fromJSONArray parses a JSON array; an error is its only item.
func fromJSONArray(s string) []any {
	a := []any{}
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		a = []any{err.Error()}
	}
	return a
}

// asDuration reads a duration as Helm's duration helpers do: a
// time.Duration, a Go duration string, or a number of seconds (as a
// number or a numeric string).
func asDuration(v any) (time.Duration, error) {
	switch x := v.(type) {
	case time.Duration:
		return x, nil
	case nil:
		return 0, errors.New("invalid duration")
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return 0, errors.New("empty duration")
		}
		if d, err := time.ParseDuration(s); err == nil {
			return d, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return secondsFloat(f)
		}
		return 0, fmt.Errorf("could not parse duration %q", x)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s := rv.Int()
		if s > math.MaxInt64/int64(time.Second) || s < math.MinInt64/int64(time.Second) {
			return 0, fmt.Errorf("duration seconds overflow: %d", s)
		}
		return time.Duration(s) * time.Second, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s := rv.Uint()
		if s > uint64(math.MaxInt64/int64(time.Second)) {
			return 0, fmt.Errorf("duration seconds overflow: %d", s)
		}
		return time.Duration(int64(s)) * time.Second, nil
	case reflect.Float32, reflect.Float64:
		return secondsFloat(rv.Float())
	}
	return 0, fmt.Errorf("unsupported duration type %T", v)
}

// secondsFloat is a number of seconds as a duration, refusing what does
// not fit.
func secondsFloat(s float64) (time.Duration, error) {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return 0, fmt.Errorf("invalid duration seconds: %v", s)
	}
	limit := float64(math.MaxInt64) / float64(time.Second)
	if s > limit || s < float64(math.MinInt64)/float64(time.Second) {
		return 0, fmt.Errorf("duration seconds overflow: %v", s)
	}
	n := s * float64(time.Second)
	if n > float64(math.MaxInt64) || n < float64(math.MinInt64) {
		return 0, fmt.Errorf("duration nanoseconds overflow: %v", n)
	}
	return time.Duration(n), nil
}

func mustToDuration(v any) time.Duration {
	d, err := asDuration(v)
	if err != nil {
		panic(err)
	}
	return d
}

// durationOr0 is v as a duration, or 0 when it is not one.
func durationOr0(v any) time.Duration {
	d, err := asDuration(v)
	if err != nil {
		return 0
	}
	return d
}

// durationTo rounds or truncates v to a multiple of m: 0 when v is not a
// duration, v when m is not.
func durationTo(v, m any, to func(time.Duration, time.Duration) time.Duration) time.Duration {
	d, err := asDuration(v)
	if err != nil {
		return 0
	}
	mul, err := asDuration(m)
	if err != nil {
		return d
	}
	return to(d, mul)
}
