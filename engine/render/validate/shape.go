package validate

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"
)

// shapeKind says how a JSON value decodes into a Go type.
type shapeKind uint8

const (
	shapeUnsure      shapeKind = iota // never accepted: strictDecode decides
	shapeDelegate                     // decoded on its own, as strictDecode would
	shapeAny                          // an empty interface: any JSON value
	shapeBool                         // a bool kind
	shapeString                       // a string kind
	shapeInt                          // a signed integer kind, in [min, max]
	shapeUint                         // an unsigned integer kind, up to max
	shapeFloat32                      // float32
	shapeFloat64                      // float64
	shapePtr                          // a pointer to elem
	shapeSlice                        // a slice of elem
	shapeMap                          // a map from a plain string kind to elem
	shapeStruct                       // a struct, by JSON field name
	shapeQuantity                     // resource.Quantity
	shapeIntOrString                  // intstr.IntOrString
)

// typeShape is what acceptsValue needs to know of a Go type to tell that
// the JSON encoding of a value decodes into it with no error and no strict
// error, as sigs.k8s.io/json's UnmarshalStrict would decode it.
type typeShape struct {
	kind     shapeKind
	t        reflect.Type
	min, max int64                 // shapeInt: the range; shapeUint: max
	elem     *typeShape            // shapePtr, shapeSlice, shapeMap
	fields   map[string]*typeShape // shapeStruct; nil where a name is unsure
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumberType      = reflect.TypeFor[json.Number]()
	quantityType        = reflect.TypeFor[resource.Quantity]()
	intOrStringType     = reflect.TypeFor[intstr.IntOrString]()
)

// shapes caches the shape of every type built so far. Shapes are built
// whole under shapeMu, and only read once published in rootShapes.
var (
	shapeMu    sync.Mutex
	shapes     = map[reflect.Type]*typeShape{}
	rootShapes sync.Map // reflect.Type → *typeShape
)

// shapeOf returns the shape of t, building it on first use.
func shapeOf(t reflect.Type) *typeShape {
	if s, ok := rootShapes.Load(t); ok {
		return s.(*typeShape)
	}
	shapeMu.Lock()
	defer shapeMu.Unlock()
	s := buildShape(t)
	rootShapes.Store(t, s)
	return s
}

// buildShape returns the shape of t. It must hold shapeMu. A recursive
// type refers to its own shape, registered before its parts are built.
func buildShape(t reflect.Type) *typeShape {
	if s := shapes[t]; s != nil {
		return s
	}
	s := &typeShape{t: t}
	shapes[t] = s
	switch {
	case t == quantityType:
		s.kind = shapeQuantity
	case t == intOrStringType:
		s.kind = shapeIntOrString
	case t.Kind() == reflect.Pointer && (t.Elem() == quantityType || t.Elem() == intOrStringType):
		s.kind, s.elem = shapePtr, buildShape(t.Elem())
	case decodesItself(t):
		s.kind = shapeDelegate
	default:
		buildKind(s, t)
	}
	return s
}

// buildKind fills in the shape of a type that has no decoding of its own.
func buildKind(s *typeShape, t reflect.Type) {
	switch t.Kind() {
	case reflect.Bool:
		s.kind = shapeBool
	case reflect.String:
		s.kind = shapeString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		s.kind, s.min, s.max = shapeInt, int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s.kind, s.max = shapeUint, math.MaxInt64
		if bits := t.Bits(); bits < 64 {
			s.max = int64(1)<<bits - 1
		}
	case reflect.Float32:
		s.kind = shapeFloat32
	case reflect.Float64:
		s.kind = shapeFloat64
	case reflect.Interface:
		s.kind = shapeDelegate
		if t.NumMethod() == 0 {
			s.kind = shapeAny
		}
	case reflect.Pointer:
		s.kind, s.elem = shapePtr, buildShape(t.Elem())
	case reflect.Slice:
		// A []byte decodes from base64 text, and from an array.
		s.kind = shapeDelegate
		if t.Elem().Kind() != reflect.Uint8 {
			s.kind, s.elem = shapeSlice, buildShape(t.Elem())
		}
	case reflect.Map:
		s.kind = shapeDelegate
		if k := t.Key(); k.Kind() == reflect.String && !reflect.PointerTo(k).Implements(textUnmarshalerType) {
			s.kind, s.elem = shapeMap, buildShape(t.Elem())
		}
	case reflect.Struct:
		s.kind = shapeStruct
		s.fields = map[string]*typeShape{}
		if !addFields(s.fields, t) {
			s.kind, s.fields = shapeUnsure, nil
		}
	default:
		s.kind = shapeDelegate
	}
}

// decodesItself reports whether t, or a pointer on the way from t to what
// it points to, decodes JSON its own way, as encoding/json's indirect
// finds: through UnmarshalJSON or UnmarshalText, or as a json.Number.
func decodesItself(t reflect.Type) bool {
	for {
		if t == jsonNumberType || implementsDecoder(t) || implementsDecoder(reflect.PointerTo(t)) {
			return true
		}
		if t.Kind() != reflect.Pointer {
			return false
		}
		t = t.Elem()
	}
}

// implementsDecoder reports whether t has UnmarshalJSON or UnmarshalText.
func implementsDecoder(t reflect.Type) bool {
	return t.Implements(jsonUnmarshalerType) || t.Implements(textUnmarshalerType)
}

// addFields adds the JSON fields of struct t to fields, following
// encoding/json's rules for names and embedded structs. A name that more
// than one field claims, or that has the ",string" option, maps to nil.
// It reports false for embedding it does not follow: embedded pointers
// and unexported embedded structs.
func addFields(fields map[string]*typeShape, t reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() && !sf.Anonymous {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !isValidTag(name) {
			name = ""
		}
		ft := sf.Type
		if ft.Name() == "" && ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if sf.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			if sf.Type.Kind() == reflect.Pointer || !sf.IsExported() || !addFields(fields, ft) {
				return false
			}
			continue
		}
		if sf.Anonymous && !sf.IsExported() {
			continue // an unexported embedded non-struct
		}
		if name == "" {
			name = sf.Name
		}
		if _, dup := fields[name]; dup || hasOption(opts, "string") {
			fields[name] = nil
			continue
		}
		fields[name] = buildShape(sf.Type)
	}
	return true
}

// hasOption reports whether the comma-separated tag options hold opt.
func hasOption(opts, opt string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == opt {
			return true
		}
	}
	return false
}

// isValidTag is encoding/json's test of a field name in a tag.
func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// accepts reports whether the JSON encoding of v, a value of yamldoc.Decode's
// output, decodes into the shape's type with no error and no strict error
// under sigs.k8s.io/json's UnmarshalStrict. False means it might not: the
// caller then decodes for real. As in encoding/json, null decodes into
// anything that does not decode itself.
func (s *typeShape) accepts(v any) bool {
	if v == nil && s.kind > shapeDelegate {
		return true
	}
	switch s.kind {
	case shapeDelegate:
		return delegateAccepts(s.t, v)
	case shapeAny:
		return jsonSafe(v)
	case shapeBool:
		_, ok := v.(bool)
		return ok
	case shapeString:
		_, ok := v.(string)
		return ok
	case shapeInt, shapeUint:
		n, ok := v.(int64)
		return ok && n >= s.min && n <= s.max
	case shapeFloat32:
		_, ok := v.(int64)
		return ok
	case shapeFloat64:
		return jsonSafe(v) && isNumber(v)
	case shapePtr:
		return s.elem.accepts(v)
	case shapeSlice:
		return s.acceptsSlice(v)
	case shapeMap, shapeStruct:
		return s.acceptsObject(v)
	case shapeQuantity:
		return acceptsQuantity(v)
	case shapeIntOrString:
		return acceptsIntOrString(v)
	}
	return false
}

// acceptsSlice checks each item of a JSON array against the element.
func (s *typeShape) acceptsSlice(v any) bool {
	a, ok := v.([]any)
	if !ok {
		return false
	}
	for _, item := range a {
		if !s.elem.accepts(item) {
			return false
		}
	}
	return true
}

// acceptsObject checks a JSON object against a map's element, or against
// a struct's fields: a key that names no field is an unknown field.
func (s *typeShape) acceptsObject(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, val := range m {
		f := s.elem
		if s.kind == shapeStruct {
			f = s.fields[k]
		}
		if f == nil || !f.accepts(val) {
			return false
		}
	}
	return true
}

// acceptsQuantity mirrors Quantity.UnmarshalJSON for a string whose JSON
// encoding needs no escapes, and delegates anything else.
func acceptsQuantity(v any) bool {
	s, ok := v.(string)
	if !ok || strings.TrimLeft(s, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-") != "" {
		return delegateAccepts(quantityType, v)
	}
	_, err := resource.ParseQuantity(s)
	return err == nil
}

// acceptsIntOrString mirrors IntOrString.UnmarshalJSON: a string, or a
// number that fits int32.
func acceptsIntOrString(v any) bool {
	switch t := v.(type) {
	case string:
		return true
	case int64:
		return t >= math.MinInt32 && t <= math.MaxInt32
	}
	return delegateAccepts(intOrStringType, v)
}

// delegateAccepts decodes the JSON encoding of v into a new value of type
// t exactly as strictDecode would decode it in place: encoding/json's
// encoding of a value is the same inside a document and alone, and a
// fresh value is what a field of a fresh object starts as.
func delegateAccepts(t reflect.Type, v any) bool {
	raw, err := json.Marshal(v)
	if err != nil {
		return false
	}
	strict, err := kjson.UnmarshalStrict(raw, reflect.New(t).Interface())
	return err == nil && len(strict) == 0
}

// isNumber reports whether v is a JSON number.
func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

// jsonSafe reports whether v holds only values that encoding/json encodes:
// JSON-compatible types, and no NaN or infinite float.
func jsonSafe(v any) bool {
	switch t := v.(type) {
	case nil, bool, string, int64:
		return true
	case float64:
		return !math.IsNaN(t) && !math.IsInf(t, 0)
	case []any:
		for _, item := range t {
			if !jsonSafe(item) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, item := range t {
			if !jsonSafe(item) {
				return false
			}
		}
		return true
	}
	return false
}

// rejectedPath returns the JSON path, below path, of the first value in v
// (in key order) that the shape does not accept: where a value that
// decodes itself, such as a quantity, failed. A key that names no field is
// skipped (strict decoding reports it). It returns "" when the shape
// accepts v, or cannot tell (shapeUnsure): the caller names its own path.
func (s *typeShape) rejectedPath(v any, path string) string {
	if s.kind == shapeUnsure || s.accepts(v) {
		return ""
	}
	switch s.kind {
	case shapePtr:
		return s.elem.rejectedPath(v, path)
	case shapeSlice:
		if a, ok := v.([]any); ok {
			for i, item := range a {
				if p := s.elem.rejectedPath(item, fmt.Sprintf("%s[%d]", path, i)); p != "" {
					return p
				}
			}
		}
	case shapeMap, shapeStruct:
		if m, ok := v.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				f := s.elem
				if s.kind == shapeStruct {
					f = s.fields[k]
				}
				if f == nil {
					continue
				}
				sub := k
				if path != "" {
					sub = path + "." + k
				}
				if p := f.rejectedPath(m[k], sub); p != "" {
					return p
				}
			}
		}
	}
	return path
}
