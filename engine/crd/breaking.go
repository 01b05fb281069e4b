package crd

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// BreakKind says how a CRD change breaks the parents already stored.
type BreakKind string

// The changes Breaking reports.
const (
	// FieldRemoved: a field that a stored parent sets is no longer in the
	// schema, so the API server prunes it from the parent.
	FieldRemoved BreakKind = "FieldRemoved"
	// TypeNarrowed: a field that a stored parent sets accepts fewer values
	// than before (number to integer, string to enum, an enum that lost
	// values, a free-form object that became closed).
	TypeNarrowed BreakKind = "TypeNarrowed"
	// ConstraintViolated: a stored parent is refused by the new schema's
	// validation (a tightened minimum, pattern, CEL rule ...).
	ConstraintViolated BreakKind = "ConstraintViolated"
	// RequiredAdded: a field is newly required, has no default, and a
	// stored parent does not set it.
	RequiredAdded BreakKind = "RequiredAdded"
	// ScopeChanged: the kind moved between Namespaced and Cluster while
	// parents are stored.
	ScopeChanged BreakKind = "ScopeChanged"
	// VersionRemoved: a version that was served no longer is, while
	// parents are stored.
	VersionRemoved BreakKind = "VersionRemoved"
	// VersionStillStored: a version is removed while the CRD's
	// status.storedVersions lists it or parents were last written in it.
	// No setting overrides it (Break.Overridable).
	VersionStillStored BreakKind = "VersionStillStored"
	// ScaleRemoved: a version that is still served lost its scale
	// subresource while parents are stored: kubectl scale and
	// HorizontalPodAutoscalers that target them stop working (the parents
	// themselves are intact).
	ScaleRemoved BreakKind = "ScaleRemoved"
)

// MaxParents caps the parents one Break names; Break.More counts the rest.
const MaxParents = 5

// Break is one change from an installed CRD to a new one that would break
// parents already stored.
type Break struct {
	Kind BreakKind
	// Version is the CRD version the change is in; empty for the scope.
	Version string
	// Path is the field, as ".spec.database.size" (list items "[*]", map
	// values ".*"); empty for the scope, a version or a failed validation.
	Path string
	// Detail says what changed, or the validation's error.
	Detail string
	// Parents names the stored parents it breaks ("namespace/name", or
	// "name" when cluster-scoped), sorted, at most MaxParents.
	Parents []string
	// More is how many more parents it breaks.
	More int
}

// String is one line for a log, an Event or a terminal:
// "v1alpha1 .spec.replicas: type narrowed: number became integer (parents: shop/web)",
// "v1: version removed (parents: shop/web)".
func (b Break) String() string {
	var s strings.Builder
	s.WriteString(b.Version)
	if b.Version != "" && b.Path != "" {
		s.WriteByte(' ')
	}
	s.WriteString(b.Path)
	if b.Version != "" || b.Path != "" {
		s.WriteString(": ")
	}
	s.WriteString(b.Detail)
	if len(b.Parents) == 0 && b.More == 0 {
		return s.String()
	}
	s.WriteString(" (parents: ")
	s.WriteString(strings.Join(b.Parents, ", "))
	if b.More > 0 {
		fmt.Fprintf(&s, " and %d more", b.More)
	}
	s.WriteByte(')')
	return s.String()
}

// AdmitFunc validates a parent as the API server would on create, under
// the new CRD: nil when it would be stored, the API server's error when
// it would be refused.
type AdmitFunc func(obj map[string]any) error

// Admission is the AdmitFunc of newCRD, from its Admitter.
func Admission(newCRD *apiextv1.CustomResourceDefinition) (AdmitFunc, error) {
	a, err := NewAdmitter(newCRD)
	if err != nil {
		return nil, fmt.Errorf("prepare the validation of CRD %s: %w", newCRD.Name, err)
	}
	return func(obj map[string]any) error {
		_, err := a.Admit(obj)
		return err
	}, nil
}

// Check is Breaking with the new CRD's own validation (Admission).
func Check(old, newCRD *apiextv1.CustomResourceDefinition, stored []map[string]any) ([]Break, error) {
	admit, err := Admission(newCRD)
	if err != nil {
		return nil, err
	}
	return Breaking(old, newCRD, stored, admit), nil
}

// Breaking names every change from old, the installed CRD, to newCRD
// that would break a parent in stored (the kind's objects as the API
// server returns them). It fetches nothing. Structural changes (a removed
// field, a narrowed type, a new required field) break the parents that
// set, or lack, the field; a changed scope or a removed version breaks
// every stored parent, and one still stored or last written in (retired)
// is a VersionStillStored; and each stored parent, without its status, is run
// through admit (nil skips it), the new schema's validation, so that a
// tightened constraint breaks the parents that violate it. With nothing
// stored, only a version still in status.storedVersions breaks.
func Breaking(old, newCRD *apiextv1.CustomResourceDefinition, stored []map[string]any, admit AdmitFunc) []Break {
	breaks := retired(old, newCRD, stored)
	if len(stored) == 0 {
		return breaks
	}
	all := parentNames(stored, func(map[string]any) bool { return true })
	if old.Spec.Scope != newCRD.Spec.Scope {
		breaks = append(breaks, named(Break{Kind: ScopeChanged,
			Detail: fmt.Sprintf("scope changed from %s to %s", old.Spec.Scope, newCRD.Spec.Scope)}, all))
	}
	for _, ov := range old.Spec.Versions {
		nv := version(newCRD, ov.Name)
		switch {
		case !ov.Served:
		case nv == nil && slices.ContainsFunc(breaks, func(b Break) bool { return b.Kind == VersionStillStored && b.Version == ov.Name }):
		case nv == nil:
			breaks = append(breaks, named(Break{Kind: VersionRemoved, Version: ov.Name, Detail: "version removed"}, all))
		case !nv.Served:
			breaks = append(breaks, named(Break{Kind: VersionRemoved, Version: ov.Name, Detail: "version no longer served"}, all))
		case hasScale(ov) && !hasScale(*nv):
			breaks = append(breaks, named(Break{Kind: ScaleRemoved, Version: ov.Name,
				Detail: "scale subresource removed: kubectl scale and HorizontalPodAutoscalers that target these parents stop working"}, all))
		}
		if nv == nil || ov.Schema == nil || nv.Schema == nil {
			continue
		}
		w := walker{version: ov.Name, stored: stored}
		w.object(ov.Schema.OpenAPIV3Schema, nv.Schema.OpenAPIV3Schema, nil, true)
		breaks = append(breaks, w.breaks...)
	}
	if admit != nil {
		breaks = append(breaks, violations(newCRD, stored, admit)...)
	}
	return breaks
}

// hasScale reports whether a CRD version has the scale subresource.
func hasScale(v apiextv1.CustomResourceDefinitionVersion) bool {
	return v.Subresources != nil && v.Subresources.Scale != nil
}

// version returns the CRD's version called name, or nil.
func version(c *apiextv1.CustomResourceDefinition, name string) *apiextv1.CustomResourceDefinitionVersion {
	for i := range c.Spec.Versions {
		if c.Spec.Versions[i].Name == name {
			return &c.Spec.Versions[i]
		}
	}
	return nil
}

// named sets b's parents from names, capped at MaxParents.
func named(b Break, names []string) Break {
	if len(names) > MaxParents {
		b.Parents, b.More = names[:MaxParents], len(names)-MaxParents
	} else {
		b.Parents = names
	}
	return b
}

// parentNames names the stored parents that match, sorted.
func parentNames(stored []map[string]any, match func(map[string]any) bool) []string {
	var names []string
	for _, obj := range stored {
		if !match(obj) {
			continue
		}
		md, _ := obj["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		if ns, _ := md["namespace"].(string); ns != "" {
			name = ns + "/" + name
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// violations runs each stored parent through admit at newCRD's storage
// version, and groups the parents it refuses by the error's text.
func violations(newCRD *apiextv1.CustomResourceDefinition, stored []map[string]any, admit AdmitFunc) []Break {
	storage := ""
	for _, v := range newCRD.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	refused := map[string][]map[string]any{}
	for _, obj := range stored {
		if err := admit(asCreated(obj, newCRD.Spec.Group+"/"+storage)); err != nil {
			refused[err.Error()] = append(refused[err.Error()], obj)
		}
	}
	msgs := make([]string, 0, len(refused))
	for msg := range refused {
		msgs = append(msgs, msg)
	}
	sort.Strings(msgs)
	breaks := make([]Break, 0, len(msgs))
	for _, msg := range msgs {
		names := parentNames(refused[msg], func(map[string]any) bool { return true })
		breaks = append(breaks, named(Break{Kind: ConstraintViolated, Version: storage,
			Detail: "invalid under the new schema: " + msg}, names))
	}
	return breaks
}

// asCreated is what a client would send to create obj again at
// apiVersion: its spec and other fields, its names, labels and
// annotations, but not its status or the server's metadata.
func asCreated(obj map[string]any, apiVersion string) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "status" && k != "metadata" {
			out[k] = v
		}
	}
	out["apiVersion"] = apiVersion
	md, _ := obj["metadata"].(map[string]any)
	keep := map[string]any{}
	for _, k := range []string{"name", "namespace", "labels", "annotations"} {
		if v, ok := md[k]; ok {
			keep[k] = v
		}
	}
	out["metadata"] = keep
	return out
}

// walker compares one version's old and new schemas.
type walker struct {
	version string
	stored  []map[string]any
	breaks  []Break
}

// add records a break at path for the stored parents that match.
func (w *walker) add(kind BreakKind, path []string, detail string, match func(map[string]any) bool) {
	names := parentNames(w.stored, match)
	if len(names) == 0 {
		return
	}
	w.breaks = append(w.breaks, named(Break{Kind: kind, Version: w.version, Path: pathString(path), Detail: detail}, names))
}

// sets matches the parents that hold a value at path.
func sets(path []string) func(map[string]any) bool {
	return func(obj map[string]any) bool {
		for _, v := range valuesAt(obj, path) {
			if v != nil {
				return true
			}
		}
		return false
	}
}

// object compares the schemas of the value at path. At the root (the
// parent object) only the user's fields are compared: status is Loom's
// and written again on every reconcile, metadata is the API server's.
func (w *walker) object(old, cur *apiextv1.JSONSchemaProps, path []string, root bool) {
	if old == nil || cur == nil {
		return
	}
	if !root {
		if detail := narrowing(old, cur); detail != "" {
			w.add(TypeNarrowed, path, "type narrowed: "+detail, sets(path))
		}
		w.closed(old, cur, path)
	}
	for _, name := range sortedProps(old.Properties) {
		if root && (name == "status" || name == "metadata" || name == "apiVersion" || name == "kind") {
			continue
		}
		child := append(slices.Clip(path), name)
		o := old.Properties[name]
		n, ok := cur.Properties[name]
		if !ok {
			if !open(cur) {
				w.add(FieldRemoved, child, "field removed", sets(child))
			}
			continue
		}
		w.object(&o, &n, child, false)
	}
	w.required(old, cur, path)
	if old.Items != nil && cur.Items != nil {
		w.object(old.Items.Schema, cur.Items.Schema, append(slices.Clip(path), "[*]"), false)
	}
	if old.AdditionalProperties != nil && cur.AdditionalProperties != nil {
		w.object(old.AdditionalProperties.Schema, cur.AdditionalProperties.Schema, append(slices.Clip(path), "*"), false)
	}
}

// required reports the fields cur newly requires, without a default, at
// the parents whose object at path exists and lacks them.
func (w *walker) required(old, cur *apiextv1.JSONSchemaProps, path []string) {
	for _, name := range cur.Required {
		if slices.Contains(old.Required, name) {
			continue
		}
		if p, ok := cur.Properties[name]; ok && p.Default != nil {
			continue
		}
		w.add(RequiredAdded, append(slices.Clip(path), name), "newly required, with no default", func(obj map[string]any) bool {
			for _, v := range valuesAt(obj, path) {
				if m, ok := v.(map[string]any); ok && m[name] == nil {
					return true
				}
			}
			return false
		})
	}
}

// closed reports an object that kept unknown keys (preserve-unknown-fields
// or a map) and now prunes them, at the parents that set such keys.
func (w *walker) closed(old, cur *apiextv1.JSONSchemaProps, path []string) {
	if !open(old) || open(cur) || (cur.Type != "object" && cur.Type != "") {
		return
	}
	w.add(TypeNarrowed, path, "type narrowed: free-form object became closed: fields not in its properties are pruned", func(obj map[string]any) bool {
		for _, v := range valuesAt(obj, path) {
			m, _ := v.(map[string]any)
			for k := range m {
				if _, known := cur.Properties[k]; !known {
					return true
				}
			}
		}
		return false
	})
}

// open reports whether an object schema keeps keys its properties do not
// name.
func open(s *apiextv1.JSONSchemaProps) bool {
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		return true
	}
	ap := s.AdditionalProperties
	return ap != nil && (ap.Allows || ap.Schema != nil)
}

// narrowing says how cur accepts fewer values than old, or "".
func narrowing(old, cur *apiextv1.JSONSchemaProps) string {
	oldType, curType := typeName(old), typeName(cur)
	switch {
	case oldType == curType:
	case oldType == "integer" && curType == "number":
	case (oldType == "integer" || oldType == "string") && curType == "int-or-string":
	case curType == "any":
	default:
		return oldType + " became " + curType
	}
	if len(cur.Enum) == 0 {
		return ""
	}
	if len(old.Enum) == 0 {
		return "any " + curType + " became enum " + enumString(cur.Enum)
	}
	var lost []apiextv1.JSON
	for _, o := range old.Enum {
		if !slices.ContainsFunc(cur.Enum, func(n apiextv1.JSON) bool { return string(n.Raw) == string(o.Raw) }) {
			lost = append(lost, o)
		}
	}
	if len(lost) > 0 {
		return "enum lost " + enumString(lost)
	}
	return ""
}

// typeName is a schema's type as Breaking compares it.
func typeName(s *apiextv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int-or-string"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

func enumString(e []apiextv1.JSON) string {
	vals := make([]string, len(e))
	for i, v := range e {
		vals[i] = string(v.Raw)
	}
	return "[" + strings.Join(vals, ", ") + "]"
}

func sortedProps(m map[string]apiextv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// pathString writes a path as ".spec.ports[*].name" (map values ".*").
func pathString(path []string) string {
	var s strings.Builder
	for _, p := range path {
		if p != "[*]" {
			s.WriteByte('.')
		}
		s.WriteString(p)
	}
	return s.String()
}

// valuesAt collects the values at path in obj: "[*]" steps into every
// item of a list, "*" into every value of a map.
func valuesAt(obj any, path []string) []any {
	if len(path) == 0 {
		return []any{obj}
	}
	var out []any
	switch p := path[0]; {
	case p == "[*]":
		list, _ := obj.([]any)
		for _, item := range list {
			out = append(out, valuesAt(item, path[1:])...)
		}
	case p == "*":
		m, _ := obj.(map[string]any)
		for _, k := range sortedMapKeys(m) {
			out = append(out, valuesAt(m[k], path[1:])...)
		}
	default:
		m, _ := obj.(map[string]any)
		if v, ok := m[p]; ok {
			out = append(out, valuesAt(v, path[1:])...)
		}
	}
	return out
}

func sortedMapKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
