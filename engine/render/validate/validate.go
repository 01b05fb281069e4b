package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
)

// FieldError is a validation failure of one field of a rendered object.
type FieldError struct {
	// Path is the field's JSON path, e.g. spec.replicas.
	Path string
	// Msg says what is wrong with it.
	Msg string
}

// Error formats the path, then the message.
func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

// FieldOf returns the last path element named by a *FieldError in err.
func FieldOf(err error) string {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return ""
	}
	field := fe.Path
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	if i := strings.IndexByte(field, '['); i >= 0 {
		field = field[:i] // containers[0]: the key is containers
	}
	return field
}

// Object checks one decoded object before anything reaches a cluster:
// apiVersion, kind and a valid metadata.name must be present, and objects
// of kinds built into Kubernetes must decode strictly into their k8s.io/api
// type, so that a misspelt field or a string where an int belongs fails.
func Object(obj map[string]any) error {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" {
		return &FieldError{Path: "apiVersion", Msg: "required"}
	}
	if kind == "" {
		return &FieldError{Path: "kind", Msg: "required"}
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return &FieldError{Path: "apiVersion", Msg: err.Error()}
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return &FieldError{Path: "metadata", Msg: "required"}
	}
	name, _ := meta["name"].(string)
	if name == "" {
		return &FieldError{Path: "metadata.name", Msg: "required (generateName is not supported: Loom must know each child's name)"}
	}
	if errs := nameErrors(kind, name); len(errs) > 0 {
		return &FieldError{Path: "metadata.name", Msg: fmt.Sprintf("invalid name %q: %s", name, strings.Join(errs, "; "))}
	}
	return strictDecode(gv.WithKind(kind), obj)
}

// nameErrors applies the naming rule the API server applies to kind.
func nameErrors(kind, name string) []string {
	switch kind {
	case "Service", "Namespace":
		return validation.IsDNS1035Label(name)
	default:
		return validation.IsDNS1123Subdomain(name)
	}
}

// strictDecode decodes obj into its built-in Go type when the kind is one of
// Kubernetes' own, and reports unknown fields and mistyped values.
//
// Most objects are valid, and checking the decoded values against the
// type's cached shape tells so without encoding and decoding JSON. Only an
// object that the shape does not accept is decoded for real, which decides
// and gives the error.
func strictDecode(gvk schema.GroupVersionKind, obj map[string]any) error {
	shape := kindShape(gvk)
	if shape == nil || shape.accepts(obj) {
		return nil
	}
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil
	}
	return jsonStrictDecode(gvk, typed, obj)
}

// kindShapes caches the shape of the Go type of each built-in kind seen.
var kindShapes sync.Map // schema.GroupVersionKind → *typeShape

// kindShape returns the shape of gvk's Go type, or nil when gvk is not a
// built-in kind.
func kindShape(gvk schema.GroupVersionKind) *typeShape {
	if s, ok := kindShapes.Load(gvk); ok {
		return s.(*typeShape)
	}
	if !scheme.Scheme.Recognizes(gvk) {
		return nil
	}
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil
	}
	s := shapeOf(reflect.TypeOf(typed))
	kindShapes.Store(gvk, s)
	return s
}

// jsonStrictDecode decodes the JSON encoding of obj into typed, a new object
// of kind gvk, as the API server would.
func jsonStrictDecode(gvk schema.GroupVersionKind, typed any, obj map[string]any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode as JSON: %w", err)
	}
	strict, err := kjson.UnmarshalStrict(raw, typed)
	if err != nil {
		return decodeError(typed, obj, err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("not a valid %s: %s", gvk.Kind, strings.Join(msgs, "; "))
	}
	return nil
}

// jsonTypeError matches encoding/json's message for a mistyped value.
// The value is named by its JSON type, and numbers also by their value:
// "cannot unmarshal number 1.5 into Go struct field ...".
var jsonTypeError = regexp.MustCompile(`cannot unmarshal (\w+(?: \S+)?) into Go struct field [^.]*\.(\S+) of type (\S+)`)

// decodeError rewrites a decoding error of obj into typed as a
// *FieldError with a path. encoding/json names the field of a mistyped
// value; a value that decodes itself (a quantity, a time, base64 bytes)
// fails without saying where, and the shape of typed finds it.
func decodeError(typed any, obj map[string]any, err error) error {
	if m := jsonTypeError.FindStringSubmatch(err.Error()); m != nil {
		return &FieldError{Path: m[2], Msg: fmt.Sprintf("must be %s, not %s", m[3], m[1])}
	}
	if path := shapeOf(reflect.TypeOf(typed)).rejectedPath(obj, ""); path != "" {
		return &FieldError{Path: path, Msg: err.Error()}
	}
	return err
}
