package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Version is one more version of the parent's API, served beside the hub
// (the version parent.apiVersion names, whose schema is loom.yaml's
// schema block, and which the templates and the status template read).
// Loom converts a parent between this version and the hub with the rules
// of Conversion, and between two other versions through the hub.
type Version struct {
	// Name is the version, e.g. v1alpha1: a Kubernetes version name
	// (v1, v2beta1, ...), not the hub's and not another's.
	Name string `json:"name"`
	// Schema is this version's API, in the compact or the OpenAPI form.
	Schema *Schema `json:"schema"`
	// Deprecated marks the version deprecated: kubectl prints
	// DeprecationWarning (or the API server's default warning) on every
	// request made in it.
	Deprecated bool `json:"deprecated,omitempty"`
	// DeprecationWarning replaces the API server's default warning for a
	// deprecated version.
	DeprecationWarning string `json:"deprecationWarning,omitempty"`
	// Conversion says how a parent of this version becomes a parent of
	// the hub, and back.
	Conversion Conversion `json:"conversion"`
}

// Conversion is how a parent moves between a version and the hub: either
// declarative Moves, or a pair of templates. What neither mentions is kept
// at the same path when the other version's schema has it. What a version
// cannot hold is kept in the parent's loom.dev/conversion-data annotation
// on the way through, so that a round trip gives the parent back.
type Conversion struct {
	// Moves are the field moves from this version to the hub, applied in
	// order; the way back applies their inverses in reverse order.
	Moves []Move `json:"moves,omitempty"`
	// ToHub names a template file, inside the set, that renders the hub's
	// spec from this version's parent (.Spec, .Metadata, .Object).
	ToHub string `json:"toHub,omitempty"`
	// FromHub names a template file, inside the set, that renders this
	// version's spec from the hub's parent.
	FromHub string `json:"fromHub,omitempty"`
}

// Move is one declarative field move. Paths are dotted, from the object's
// root (spec.size, spec.image.tag, status.url). Exactly one of Rename,
// Split, Join or Default is set.
type Move struct {
	// Rename moves the value at From (this version) to To (the hub):
	// a renamed field, or one moved into or out of a nested object.
	Rename *Rename `json:"rename,omitempty"`
	// Split cuts the string at From (this version) into the fields Into
	// (the hub), at Separator; the way back joins them.
	Split *Split `json:"split,omitempty"`
	// Join joins this version's string fields From into the hub's one
	// string To, at Separator; the way back cuts it (the inverse of Split).
	Join *Join `json:"join,omitempty"`
	// Default gives a field that only the hub has a value when a parent
	// of this version is converted up, unless the parent carries one in
	// its conversion data.
	Default *Default `json:"default,omitempty"`
}

// Rename is a Move of one field to another path.
type Rename struct {
	// From is the path in this version.
	From string `json:"from"`
	// To is the path in the hub.
	To string `json:"to"`
}

// Split is a Move that cuts one string field into several.
type Split struct {
	// From is the string's path in this version.
	From string `json:"from"`
	// Separator is where the string is cut, e.g. ":".
	Separator string `json:"separator"`
	// Into are the hub's paths of the parts, in order. The string is cut
	// at its last len(Into)-1 separators when Last is true, else at its
	// first ones; the last part keeps the rest, so joining gives the
	// string back.
	Into []string `json:"into"`
	// Last cuts at the last separators instead of the first (an image's
	// tag after a registry's port: host:5000/app:1.2).
	Last bool `json:"last,omitempty"`
	// Keep lists characters that a part cut off at a separator may not
	// hold: the string is not cut there when the part it would cut off
	// (after the separator with Last, before it without) would hold one
	// ("/" for an image, so that host:5000/app, which has no tag, is not
	// cut at the registry's port).
	Keep string `json:"keep,omitempty"`
}

// Join is a Move that joins several string fields into one: the inverse
// of Split, for a version whose parts the hub holds as one string.
type Join struct {
	// From are the parts' paths in this version, in order.
	From []string `json:"from"`
	// Separator is put between the parts, e.g. ":".
	Separator string `json:"separator"`
	// To is the joined string's path in the hub.
	To string `json:"to"`
	// Last and Keep say where the way back cuts To, as Split's do.
	Last bool   `json:"last,omitempty"`
	Keep string `json:"keep,omitempty"`
}

// Default is a Move that sets a hub-only field.
type Default struct {
	// Path is the field's path in the hub.
	Path string `json:"path"`
	// Value is its value, any JSON value.
	Value any `json:"value"`
}

// HubVersion is the version templates read: parent.apiVersion's.
func (c *Config) HubVersion() string { return c.ParentGVK().Version }

// StorageVersionOrHub is the version the API server stores parents in:
// StorageVersion, or the hub when loom.yaml names none.
func (c *Config) StorageVersionOrHub() string {
	if c.StorageVersion != "" {
		return c.StorageVersion
	}
	return c.HubVersion()
}

// VersionNames lists every version the set serves: the hub first, then
// Versions in loom.yaml's order.
func (c *Config) VersionNames() []string {
	out := []string{c.HubVersion()}
	for _, v := range c.Versions {
		out = append(out, v.Name)
	}
	return out
}

// Version returns the version named name, and false for the hub or an
// unknown name.
func (c *Config) Version(name string) (Version, bool) {
	for _, v := range c.Versions {
		if v.Name == name {
			return v, true
		}
	}
	return Version{}, false
}

// ConversionTemplates lists the conversion templates versions name (each
// toHub and fromHub), by path in the set, in loom.yaml's order.
func (c *Config) ConversionTemplates() []string {
	var out []string
	for _, v := range c.Versions {
		if v.Conversion.ToHub != "" {
			out = append(out, v.Conversion.ToHub, v.Conversion.FromHub)
		}
	}
	return out
}

// validateVersions checks loom.yaml's versions and storageVersion.
func validateVersions(c *Config) error {
	if len(c.Versions) == 0 {
		if c.StorageVersion != "" && c.StorageVersion != c.HubVersion() {
			return fmt.Errorf("storageVersion %q: the set serves only %s (parent.apiVersion); add it under versions", c.StorageVersion, c.HubVersion())
		}
		return nil
	}
	if c.Schema == nil {
		return errors.New("versions: a set with several versions needs the hub's schema (schema:), to convert between them")
	}
	if c.Chart != "" {
		return errors.New("versions: a chart set's parent has one version (its values)")
	}
	seen := map[string]bool{c.HubVersion(): true}
	for i, v := range c.Versions {
		at := fmt.Sprintf("versions[%d]", i)
		if v.Name == "" {
			return fmt.Errorf("%s.name is required", at)
		}
		if errs := validation.IsDNS1035Label(v.Name); len(errs) > 0 || !versionName(v.Name) {
			return fmt.Errorf("%s.name %q: must be a Kubernetes version name (v1, v2beta1, v1alpha3)", at, v.Name)
		}
		if seen[v.Name] {
			if v.Name == c.HubVersion() {
				return fmt.Errorf("%s.name %q: is the hub (parent.apiVersion), whose schema is schema:", at, v.Name)
			}
			return fmt.Errorf("%s.name %q: is declared twice", at, v.Name)
		}
		seen[v.Name] = true
		if v.Schema == nil {
			return fmt.Errorf("%s.schema is required", at)
		}
		if err := validateSchema(v.Schema); err != nil {
			return fmt.Errorf("%s.%w", at, err)
		}
		if v.Schema.AllowBreakingChanges {
			return fmt.Errorf("%s.schema.allowBreakingChanges: set it on the hub's schema, once for the whole API", at)
		}
		if v.DeprecationWarning != "" && !v.Deprecated {
			return fmt.Errorf("%s.deprecationWarning: set deprecated: true too", at)
		}
		if err := validateConversion(v.Conversion); err != nil {
			return fmt.Errorf("%s.conversion%w", at, err)
		}
	}
	if c.StorageVersion != "" && !seen[c.StorageVersion] {
		return fmt.Errorf("storageVersion %q: not a version of the set (%s)", c.StorageVersion, strings.Join(c.VersionNames(), ", "))
	}
	return nil
}

// versionName reports whether s is a Kubernetes version name: v, a number
// from 1, and optionally alpha or beta with a number from 1.
func versionName(s string) bool {
	rest, ok := strings.CutPrefix(s, "v")
	if !ok {
		return false
	}
	digits := func(s string) (string, bool) {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return s[i:], i > 0 && s[0] != '0'
	}
	rest, ok = digits(rest)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	for _, stage := range []string{"alpha", "beta"} {
		if r, ok := strings.CutPrefix(rest, stage); ok {
			r, ok = digits(r)
			return ok && r == ""
		}
	}
	return false
}

// validateConversion checks one version's conversion. Errors start with
// the field's path below conversion (".moves[0].rename.from: ...").
func validateConversion(cv Conversion) error {
	templates := cv.ToHub != "" || cv.FromHub != ""
	switch {
	case templates && len(cv.Moves) > 0:
		return errors.New(": give either moves or the templates toHub and fromHub, not both")
	case templates && (cv.ToHub == "" || cv.FromHub == ""):
		return errors.New(": a template conversion needs both toHub and fromHub, one for each way")
	}
	for _, f := range []struct{ name, path string }{{"toHub", cv.ToHub}, {"fromHub", cv.FromHub}} {
		if f.path != "" && !filepath.IsLocal(f.path) {
			return fmt.Errorf(".%s %q: must be a path inside the set's folder", f.name, f.path)
		}
	}
	for i, m := range cv.Moves {
		if err := validateMove(m); err != nil {
			return fmt.Errorf(".moves[%d]%w", i, err)
		}
	}
	return nil
}

// validateMove checks one move: exactly one kind, and its paths.
func validateMove(m Move) error {
	n := 0
	for _, set := range []bool{m.Rename != nil, m.Split != nil, m.Join != nil, m.Default != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New(": give exactly one of rename, split, join and default")
	}
	path := func(field, p string) error {
		if err := ValidPath(p); err != nil {
			return fmt.Errorf(".%s %q: %w", field, p, err)
		}
		return nil
	}
	switch {
	case m.Rename != nil:
		if err := path("rename.from", m.Rename.From); err != nil {
			return err
		}
		return path("rename.to", m.Rename.To)
	case m.Split != nil:
		if err := path("split.from", m.Split.From); err != nil {
			return err
		}
		if m.Split.Separator == "" {
			return errors.New(".split.separator is required")
		}
		if len(m.Split.Into) < 2 {
			return errors.New(".split.into: name at least two fields")
		}
		for j, p := range m.Split.Into {
			if err := path(fmt.Sprintf("split.into[%d]", j), p); err != nil {
				return err
			}
		}
	case m.Join != nil:
		if m.Join.Separator == "" {
			return errors.New(".join.separator is required")
		}
		if len(m.Join.From) < 2 {
			return errors.New(".join.from: name at least two fields")
		}
		for j, p := range m.Join.From {
			if err := path(fmt.Sprintf("join.from[%d]", j), p); err != nil {
				return err
			}
		}
		return path("join.to", m.Join.To)
	default:
		if m.Default.Value == nil {
			return errors.New(".default.value is required")
		}
		return path("default.path", m.Default.Path)
	}
	return nil
}

// ValidPath checks a conversion path: dotted field names below spec or
// status (metadata and the object's identity are not converted).
func ValidPath(p string) error {
	parts := strings.Split(p, ".")
	if len(parts) < 2 || (parts[0] != "spec" && parts[0] != "status") {
		return errors.New("must be a field below spec or status, e.g. spec.replicas")
	}
	for _, s := range parts[1:] {
		if s == "" {
			return errors.New("has an empty field name")
		}
	}
	return nil
}

// ParentGVKs returns the parent's kind in every version the set serves,
// the hub first.
func (c *Config) ParentGVKs() []schema.GroupVersionKind {
	gvk := c.ParentGVK()
	out := make([]schema.GroupVersionKind, 0, 1+len(c.Versions))
	for _, v := range c.VersionNames() {
		out = append(out, schema.GroupVersionKind{Group: gvk.Group, Version: v, Kind: gvk.Kind})
	}
	return out
}
