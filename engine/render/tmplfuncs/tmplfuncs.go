// Package tmplfuncs is the stateless part of the templates' function map:
// sprig's functions less those that read the environment or the network,
// made hermetic, with Loom's replacements that return errors instead of
// swallowing them and that cap what a function builds whole. The
// functions bound to one render (include, tpl, lookup) are render's.
package tmplfuncs

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/render/hermetic"
)

// MaxOutputBytes caps what the templates may write while rendering one
// parent, include and tpl output included, so that a runaway loop (say, a
// range over a number from the spec) fails the render instead of
// exhausting Loom's memory. A child that big could not be stored anyway.
const MaxOutputBytes = 32 << 20

// Removed are sprig functions that read the process environment or the
// network. Rendering must depend on nothing but the parent and the set.
var Removed = []string{"env", "expandenv", "getHostByName"}

// base is sprig's map, less Removed, made hermetic (hermetic.Refused
// fail; see hermetic), plus the stateless functions Loom adds. It is built
// once and never mutated.
var base = func() template.FuncMap {
	m := sprig.TxtFuncMap()
	for _, name := range Removed {
		delete(m, name)
	}
	hermetic.Apply(m)
	m["toYaml"] = toYAML
	m["fromYaml"] = fromYAML
	m["fromYamlArray"] = fromYAMLArray
	m["toJson"] = toJSON
	m["fromJson"] = fromJSON
	m["required"] = required
	m["len"] = length
	m["until"] = until
	m["untilStep"] = untilStep
	m["seq"] = seq
	m["repeat"] = repeat
	sprigUntilStep = sprig.TxtFuncMap()["untilStep"].(func(int, int, int) []int)
	sprigSeq = sprig.TxtFuncMap()["seq"].(func(...int) string)
	return m
}()

// Base returns the shared map of the stateless functions. It is built
// once: callers copy it before adding their own, and never change it.
func Base() template.FuncMap { return base }

// Bounded returns the capped versions of sprig's functions that build a
// list or a string whole (until, untilStep, seq, repeat), for a chart's
// function map, which is Helm's own otherwise.
func Bounded() template.FuncMap {
	return template.FuncMap{"until": until, "untilStep": untilStep, "seq": seq, "repeat": repeat}
}

// toYAML marshals v as YAML without the trailing newline, like Helm's, but
// returns marshalling errors instead of swallowing them.
func toYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toYaml: %w", err)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// fromYAML parses a YAML mapping.
func fromYAML(s string) (map[string]any, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("fromYaml: %w", err)
	}
	return m, nil
}

// fromYAMLArray parses a YAML sequence.
func fromYAMLArray(s string) ([]any, error) {
	var a []any
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		return nil, fmt.Errorf("fromYamlArray: %w", err)
	}
	return a, nil
}

// toJSON marshals v as compact JSON and returns errors (sprig's swallows them).
func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toJson: %w", err)
	}
	return string(b), nil
}

// fromJSON parses a JSON value and returns errors (sprig's swallows them).
func fromJSON(s string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("fromJson: %w", err)
	}
	return v, nil
}

// length is text/template's len, except that the len of a missing value
// (a key that is not there, which is nil) says so; the builtin fails
// inside reflect ("call of reflect.Value.Type on zero Value").
func length(item reflect.Value) (int, error) {
	for item.IsValid() && (item.Kind() == reflect.Pointer || item.Kind() == reflect.Interface) {
		if item.IsNil() {
			break
		}
		item = item.Elem()
	}
	if !item.IsValid() || ((item.Kind() == reflect.Pointer || item.Kind() == reflect.Interface) && item.IsNil()) {
		return 0, errors.New("len of nothing: the value is missing (a key that is not there?)")
	}
	switch item.Kind() {
	case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
		return item.Len(), nil
	}
	return 0, fmt.Errorf("len of type %s", item.Type())
}

// MaxListItems caps the lists that until and untilStep build, and the
// numbers seq prints. Like repeat's string, they are built whole before
// anything is written, so the output cap alone would let `range until
// .Spec.n` take gigabytes first.
const MaxListItems = 1 << 20

// sprig's own functions, which the guarded ones below call.
var (
	sprigUntilStep func(start, stop, step int) []int
	sprigSeq       func(params ...int) string
)

// stepCount is how many numbers untilStep(start, stop, step) makes,
// without overflowing.
func stepCount(start, stop, step int) uint64 {
	switch {
	case step > 0 && stop > start:
		return (uint64(stop)-uint64(start)-1)/uint64(step) + 1
	case step < 0 && stop < start:
		return (uint64(start)-uint64(stop)-1)/(uint64(0)-uint64(step)) + 1
	}
	return 0
}

// tooMany is the error of a function that would make n items.
func tooMany(fn string, n uint64) error {
	return fmt.Errorf("%s would make %d items, over the cap of %d (a runaway loop?)", fn, n, MaxListItems)
}

// until is sprig's until, capped at MaxListItems.
func until(count int) ([]int, error) {
	step := 1
	if count < 0 {
		step = -1
	}
	if n := stepCount(0, count, step); n > MaxListItems {
		return nil, tooMany("until", n)
	}
	return sprigUntilStep(0, count, step), nil
}

// untilStep is sprig's untilStep, capped at MaxListItems.
func untilStep(start, stop, step int) ([]int, error) {
	if n := stepCount(start, stop, step); n > MaxListItems {
		return nil, tooMany("untilStep", n)
	}
	return sprigUntilStep(start, stop, step), nil
}

// seq is sprig's seq (seq END, seq START END, seq START STEP END),
// capped at MaxListItems numbers.
func seq(params ...int) (string, error) {
	start, step, end := 1, 0, 0
	switch len(params) {
	case 1:
		end = params[0]
	case 2:
		start, end = params[0], params[1]
	case 3:
		start, step, end = params[0], params[1], params[2]
	default:
		return sprigSeq(params...), nil
	}
	if step == 0 {
		step = 1
		if end < start {
			step = -1
		}
	}
	// The end is inclusive: one step further is the exclusive stop.
	if n := stepCount(start, end, step) + 1; n > MaxListItems {
		return "", tooMany("seq", n)
	}
	return sprigSeq(params...), nil
}

// repeat is sprig's repeat, refusing a string over the output cap before
// building it.
func repeat(count int, str string) (string, error) {
	if count > 0 && len(str) > 0 && count > MaxOutputBytes/len(str) {
		return "", fmt.Errorf("repeat would make %d bytes, over the %d MiB output cap (a runaway loop?)",
			uint64(count)*uint64(len(str)), MaxOutputBytes>>20)
	}
	return strings.Repeat(str, max(count, 0)), nil
}

// required fails the render with msg when v is missing or an empty string,
// with Helm's meaning.
func required(msg string, v any) (any, error) {
	if v == nil {
		return nil, errors.New(msg)
	}
	if s, ok := v.(string); ok && s == "" {
		return nil, errors.New(msg)
	}
	return v, nil
}
