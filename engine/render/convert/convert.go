package convert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/crd"
)

// DataAnnotation holds, as JSON keyed by version name, the fields of a
// parent that the version it was converted to cannot hold.
const DataAnnotation = "loom.dev/conversion-data"

// Timeout bounds one Convert: its templates stop when it passes.
const Timeout = 2 * time.Second

// MaxObjectBytes bounds a converted parent, as JSON: the most the API
// server accepts in one request (3 MiB).
const MaxObjectBytes = 3 << 20

// MaxDataBytes bounds DataAnnotation: the API server allows 256 KiB of
// annotations on an object, and the parent's own need room.
const MaxDataBytes = 128 << 10

// ErrTimeout marks a conversion that did not finish within its deadline.
var ErrTimeout = errors.New("the conversion did not finish in time (a loop that never ends?)")

// Templates runs a set's conversion templates (engine/render implements
// it, with the set's function map, deadline and error style).
type Templates interface {
	// Spec renders the template file with parent as its data and returns
	// the spec it renders, a YAML mapping (nil when it renders nothing).
	// It stops when ctx ends. An error names file and line.
	Spec(ctx context.Context, file string, parent map[string]any) (map[string]any, error)
}

// version is one served version of the parent.
type version struct {
	name   string
	field  string // its conversion's field in loom.yaml: versions[i].conversion
	schema *structuralschema.Structural
	conv   config.Conversion // zero for the hub
}

// Converter converts a set's parents between the versions it serves. It
// is immutable after New and safe for concurrent use.
type Converter struct {
	gvk      schema.GroupVersionKind // the hub's
	names    []string                // served versions, hub first
	versions map[string]*version
	tmpl     Templates
}

// New compiles the structural schema of every version cfg serves and
// checks each move's paths against them. tmpl runs the conversion
// templates; it may be nil when no version has any. A set of one version
// has nothing to convert: New returns nil, nil.
func New(cfg config.Config, tmpl Templates) (*Converter, error) {
	if len(cfg.Versions) == 0 {
		return nil, nil
	}
	c := &Converter{gvk: cfg.ParentGVK(), names: cfg.VersionNames(), versions: map[string]*version{}, tmpl: tmpl}
	for _, name := range c.names {
		props, err := crd.VersionSchema(cfg, name)
		if err != nil {
			return nil, err
		}
		s, err := structural(props)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", name, err)
		}
		v := &version{name: name, schema: s}
		if vc, ok := cfg.Version(name); ok {
			v.conv = vc.Conversion
		}
		c.versions[name] = v
	}
	for i, vc := range cfg.Versions {
		v := c.versions[vc.Name]
		v.field = fmt.Sprintf("versions[%d].conversion", i)
		if vc.Conversion.ToHub != "" && tmpl == nil {
			return nil, fmt.Errorf("versions[%d].conversion: no template engine to run %s", i, vc.Conversion.ToHub)
		}
		if err := checkMoves(i, v, c.versions[c.gvk.Version]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// structural compiles a version's openAPIV3Schema as the API server does.
func structural(props *apiextv1.JSONSchemaProps) (*structuralschema.Structural, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props, internal, nil); err != nil {
		return nil, fmt.Errorf("convert schema to internal version: %w", err)
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("schema is not structural: %w", err)
	}
	return s, nil
}

// Versions lists the served versions, the hub first.
func (c *Converter) Versions() []string { return append([]string(nil), c.names...) }

// Hub is the version templates read.
func (c *Converter) Hub() string { return c.gvk.Version }

// Convert returns obj (a parent, any served version) in version
// toVersion, a new object; obj is not changed. Errors name the set's
// file:line where a template or move is at fault. It stops after Timeout.
func (c *Converter) Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	if !c.templated(obj.GroupVersionKind().Version, toVersion) {
		// Moves are bounded by the parent's size: no timer to arm.
		return c.ConvertContext(context.Background(), obj, toVersion)
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), Timeout, fmt.Errorf("%w: %s", ErrTimeout, Timeout))
	defer cancel()
	return c.ConvertContext(ctx, obj, toVersion)
}

// templated reports whether a conversion between two versions runs a
// template: only then can it loop, or grow the parent without bound.
func (c *Converter) templated(from, to string) bool {
	for _, name := range []string{from, to} {
		if v, ok := c.versions[name]; ok && v.conv.ToHub != "" {
			return true
		}
	}
	return false
}

// ConvertContext is Convert, stopping when ctx ends.
func (c *Converter) ConvertContext(ctx context.Context, obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	from, err := c.versionOf(obj)
	if err != nil {
		return nil, err
	}
	if _, ok := c.versions[toVersion]; !ok {
		return nil, c.notServed(toVersion)
	}
	if from == toVersion {
		return obj.DeepCopy(), nil
	}
	at := fmt.Sprintf("convert %s %s from %s to %s", c.gvk.Kind, objName(obj), from, toVersion)
	data, err := readData(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	clean := withoutData(obj.Object)
	out, err := c.raw(ctx, clean, from, toVersion)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if stored, ok := data[toVersion]; ok {
		restore(out, stored.Fields, stored.Trip)
		delete(data, toVersion)
	}
	// The raw trip back shows what toVersion cannot hold of from's.
	back, err := c.raw(ctx, out, toVersion, from)
	if err != nil {
		return nil, fmt.Errorf("%s: the way back, to see what %s cannot hold: %w", at, toVersion, err)
	}
	if fields, trip := diff(body(clean), body(back)); len(fields) > 0 {
		data[from] = kept{Fields: fields, Trip: trip}
	} else {
		delete(data, from)
	}
	delete(out, "metadata")
	if m, ok := obj.Object["metadata"]; ok {
		out["metadata"] = runtime.DeepCopyJSONValue(m)
	}
	if err := writeData(out, data); err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if err := checkMetadata(obj.Object, out); err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if c.templated(from, toVersion) {
		if raw, err := json.Marshal(out); err != nil || len(raw) > MaxObjectBytes {
			if err == nil {
				err = fmt.Errorf("the converted parent is %d bytes, more than %d", len(raw), MaxObjectBytes)
			}
			return nil, fmt.Errorf("%s: %w", at, err)
		}
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// versionOf checks that obj is the set's parent and returns its version.
func (c *Converter) versionOf(obj *unstructured.Unstructured) (string, error) {
	gvk := obj.GroupVersionKind()
	if gvk.GroupKind() != c.gvk.GroupKind() {
		return "", fmt.Errorf("convert %s %s: not a %s", gvk.Kind, objName(obj), c.gvk.GroupKind())
	}
	if _, ok := c.versions[gvk.Version]; !ok {
		return "", fmt.Errorf("convert %s %s: %w", gvk.Kind, objName(obj), c.notServed(gvk.Version))
	}
	return gvk.Version, nil
}

// notServed is the error for a version the set does not serve.
func (c *Converter) notServed(v string) error {
	return fmt.Errorf("version %q is not served by the set (it serves %s)", v, strings.Join(c.names, ", "))
}

// raw converts obj (no conversion data) from one version to another
// through the hub, pruning by each step's schema. obj is not changed.
func (c *Converter) raw(ctx context.Context, obj map[string]any, from, to string) (map[string]any, error) {
	hub := c.gvk.Version
	out := obj
	var err error
	if from != hub {
		if out, err = c.up(ctx, out, c.versions[from]); err != nil {
			return nil, err
		}
	}
	if to != hub {
		if out, err = c.down(ctx, out, c.versions[to]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// up converts obj from version v to the hub.
func (c *Converter) up(ctx context.Context, obj map[string]any, v *version) (map[string]any, error) {
	out := runtime.DeepCopyJSON(obj)
	if f := v.conv.ToHub; f != "" {
		if err := c.runTemplate(ctx, f, obj, out); err != nil {
			return nil, err
		}
	} else if err := movesUp(out, v.conv.Moves); err != nil {
		return nil, fmt.Errorf("%s to %s: %s %s.%w", v.name, c.gvk.Version, config.File, v.field, err)
	}
	return c.finish(out, c.versions[c.gvk.Version]), nil
}

// down converts obj from the hub to version v.
func (c *Converter) down(ctx context.Context, obj map[string]any, v *version) (map[string]any, error) {
	out := runtime.DeepCopyJSON(obj)
	if f := v.conv.FromHub; f != "" {
		if err := c.runTemplate(ctx, f, obj, out); err != nil {
			return nil, err
		}
	} else if err := movesDown(out, v.conv.Moves); err != nil {
		return nil, fmt.Errorf("%s to %s: %s %s.%w", c.gvk.Version, v.name, config.File, v.field, err)
	}
	return c.finish(out, v), nil
}

// runTemplate renders out's spec with file from in.
func (c *Converter) runTemplate(ctx context.Context, file string, in, out map[string]any) error {
	spec, err := c.tmpl.Spec(ctx, file, in)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			return fmt.Errorf("%w (%w)", err, cause)
		}
		return err
	}
	if spec == nil {
		delete(out, "spec")
		return nil
	}
	// As the API server decodes JSON: whole numbers int64.
	raw, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if len(raw) > MaxObjectBytes {
		return fmt.Errorf("%s: the template rendered a spec of %d bytes, more than %d", file, len(raw), MaxObjectBytes)
	}
	var s map[string]any
	if err := utiljson.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	out["spec"] = s
	return nil
}

// finish sets obj's apiVersion to v's and prunes what v cannot hold.
func (c *Converter) finish(obj map[string]any, v *version) map[string]any {
	obj["apiVersion"] = schema.GroupVersion{Group: c.gvk.Group, Version: v.name}.String()
	structuralpruning.Prune(obj, v.schema, true)
	return obj
}

// objName names a parent in errors: namespace/name, or name.
func objName(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
