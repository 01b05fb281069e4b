package crd

import (
	"errors"
	"fmt"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loom-operator/loom/engine/config"
)

// ParentTypeLabel marks a kind whose objects may be ApplySet parents
// (KEP-3659); every generated CRD carries it with the value "true".
const ParentTypeLabel = "applyset.kubernetes.io/is-parent-type"

// StatusNotes is the status field of a chart set's parent that holds the
// chart's rendered NOTES.txt, when loom.yaml asks for it (notes: true).
const StatusNotes = "notes"

// StatusRelease is the status field of a chart set's parent that records
// its release: the revision, the digest of what it renders, and the runs
// of its hooks in that revision.
const StatusRelease = "release"

// releaseSchema is the schema of status.release.
func releaseSchema() apiextv1.JSONSchemaProps {
	str := func(d string) apiextv1.JSONSchemaProps {
		return apiextv1.JSONSchemaProps{Type: "string", Description: d}
	}
	return apiextv1.JSONSchemaProps{
		Type:        "object",
		Description: "The chart release: .Release.Revision, which moves when the values or the chart change, and the hooks run in it.",
		Properties: map[string]apiextv1.JSONSchemaProps{
			"revision": {Type: "integer", Format: "int64", Description: "The release revision, from 1 (the install)."},
			"digest":   str("A digest of the chart and the values this revision renders."),
			"hooks": {Type: "array", Description: "The hooks Loom ran in this revision: each runs once.", Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &apiextv1.JSONSchemaProps{
				Type: "object", Required: []string{"kind", "name", "phase"},
				Properties: map[string]apiextv1.JSONSchemaProps{
					"group": str("The hook's API group."), "kind": str("The hook's kind."),
					"namespace": str("The hook's namespace."), "name": str("The hook's name."),
					"phase": str("Running, Succeeded, Failed, or Deleted (gone before Loom saw it finish)."),
				},
			}}},
		},
	}
}

// Generate builds the parent's CRD from a set's loom.yaml: one version per
// version the set serves (config.Config.VersionNames: the hub, then
// loom.yaml's versions; one for most sets), each served, with the status
// subresource (and the scale subresource when schema.scale declares it,
// the same on every version), its schema (the compact form compiled, or the OpenAPI form
// as given) with Loom's own status fields merged in, its deprecation and
// the printer columns; exactly one is storage (StorageVersionOrHub); and
// the names and scope. Several versions convert through Loom's webhook
// at DefaultWebhook (GenerateWith gives another), or with strategy None
// when they differ only in name. A set without
// a schema gets a CRD whose spec is free-form
// (x-kubernetes-preserve-unknown-fields). The result is the same for the
// same loom.yaml, field for field. A chart set with notes: true also has
// status.notes (StatusNotes). The CRD passes the API server's own
// validation (Validate): a schema it would refuse is an error.
func Generate(c config.Config) (*apiextv1.CustomResourceDefinition, error) {
	return GenerateWith(c, Options{})
}

// generate is Generate without the API server's validation.
func generate(c config.Config) (*apiextv1.CustomResourceDefinition, error) {
	gvk := c.ParentGVK()
	if !strings.Contains(gvk.Group, ".") {
		return nil, fmt.Errorf("parent.apiVersion: the group %q of a custom resource must be a domain with at least one dot", gvk.Group)
	}
	schema, err := parentSchema(c)
	if err != nil {
		return nil, err
	}
	if c.Chart != "" {
		st := schema.Properties["status"]
		// A chart set records its release: the revision, and its hooks'
		// runs (engine/hook).
		st.Properties[StatusRelease] = releaseSchema()
		if c.Notes {
			// A chart set that asks for it writes the chart's rendered NOTES.txt.
			st.Properties[StatusNotes] = apiextv1.JSONSchemaProps{Type: "string", Description: "The chart's NOTES.txt, rendered for this parent."}
		}
		schema.Properties["status"] = st
	}
	vers, conv, err := versions(c, schema)
	if err != nil {
		return nil, err
	}
	names := namesOf(c.Parent)
	return &apiextv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   names.Plural + "." + gvk.Group,
			Labels: map[string]string{ParentTypeLabel: "true"},
		},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group:      gvk.Group,
			Names:      names,
			Scope:      apiextv1.ResourceScope(c.Parent.ScopeOrDefault()),
			Versions:   vers,
			Conversion: conv,
		},
	}, nil
}

// SpecSchema is the compiled schema of the parent's spec, or nil when the
// set has no schema.
func SpecSchema(c config.Config) (*apiextv1.JSONSchemaProps, error) {
	if c.Schema == nil {
		return nil, nil
	}
	if c.Schema.OpenAPIV3Schema != nil {
		s, err := openAPISchema(c.Schema.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		spec := s.Properties["spec"]
		return &spec, nil
	}
	spec, _, err := compactSpec(c.Schema.Spec)
	if err != nil {
		return nil, err
	}
	return &spec, nil
}

// Unstructured is the CRD as a manifest: what `loom crd` prints and what
// is applied, without the empty status and creationTimestamp that the
// typed object would carry.
func Unstructured(crd *apiextv1.CustomResourceDefinition) (map[string]any, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return nil, fmt.Errorf("convert CustomResourceDefinition %s: %w", crd.Name, err)
	}
	delete(obj, "status")
	if meta, ok := obj["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return obj, nil
}

// freeForm is the schema of a spec without a schema.
func freeForm() apiextv1.JSONSchemaProps {
	yes := true
	return apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}
}

// parentSchema is the parent object's openAPIV3Schema, with the status
// fields of its scale subresource when the set declares one (withScale).
func parentSchema(c config.Config) (*apiextv1.JSONSchemaProps, error) {
	s, err := schemaOf(c)
	if err != nil {
		return nil, err
	}
	if sc := scaleOf(c); sc != nil {
		reserved := loomStatusNames()
		if c.Chart != "" {
			reserved = append(reserved, StatusNotes, StatusRelease)
		}
		if err := withScale(s, *sc, reserved); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// schemaOf is the parent object's openAPIV3Schema as schema: gives it,
// with Loom's own status fields.
func schemaOf(c config.Config) (*apiextv1.JSONSchemaProps, error) {
	switch {
	case c.Schema == nil:
		return &apiextv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
			"spec": freeForm(), "status": withLoomStatus(apiextv1.JSONSchemaProps{Type: "object"}),
		}}, nil
	case c.Schema.OpenAPIV3Schema != nil:
		s, err := openAPISchema(c.Schema.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		st := s.Properties["status"]
		if err := checkLoomStatus("schema.openAPIV3Schema.properties.status", st); err != nil {
			return nil, err
		}
		s.Properties["status"] = withLoomStatus(st)
		return s, nil
	}
	spec, required, err := compactSpec(c.Schema.Spec)
	if err != nil {
		return nil, err
	}
	status, err := compactStatus(c.Schema.Status)
	if err != nil {
		return nil, err
	}
	s := &apiextv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{"spec": spec, "status": status}}
	if required || len(spec.Required) > 0 {
		s.Required = []string{"spec"}
	}
	return s, nil
}

// compactSpec compiles schema.spec, and says whether the spec is required
// (its $self says so).
func compactSpec(fields map[string]any) (apiextv1.JSONSchemaProps, bool, error) {
	if len(fields) == 0 {
		return freeForm(), false, nil
	}
	return compileObject("schema.spec", fields)
}

// compactStatus compiles schema.status, with Loom's fields added. The
// status template's fields cannot be required at the top: when the
// template fails, Loom writes the status without them.
func compactStatus(fields map[string]any) (apiextv1.JSONSchemaProps, error) {
	if len(fields) == 0 {
		return withLoomStatus(apiextv1.JSONSchemaProps{Type: "object"}), nil
	}
	for _, name := range loomStatusNames() {
		if _, ok := fields[name]; ok {
			return apiextv1.JSONSchemaProps{}, fmt.Errorf("schema.status.%s: Loom writes this field; leave it out of the schema", name)
		}
	}
	st, _, err := compileObject("schema.status", fields)
	if err != nil {
		return st, err
	}
	if len(st.Required) > 0 {
		return st, fmt.Errorf("schema.status.%s: a status field cannot be required: Loom writes the status without the status template's fields when the template fails", st.Required[0])
	}
	return withLoomStatus(st), nil
}

// openAPISchema checks the OpenAPI form's top and returns a copy of it.
func openAPISchema(given *apiextv1.JSONSchemaProps) (*apiextv1.JSONSchemaProps, error) {
	s := given.DeepCopy()
	if s.Type != "object" {
		return nil, fmt.Errorf("schema.openAPIV3Schema.type: the parent is an object, not %q", s.Type)
	}
	spec, ok := s.Properties["spec"]
	if !ok {
		return nil, errors.New("schema.openAPIV3Schema.properties.spec: the parent's spec is missing (give it x-kubernetes-preserve-unknown-fields: true for a free-form spec)")
	}
	if spec.Type != "object" {
		return nil, fmt.Errorf("schema.openAPIV3Schema.properties.spec.type: the spec is an object, not %q", spec.Type)
	}
	return s, nil
}

// VersionSchema is the parent object's openAPIV3Schema in one of the
// versions the set serves (config.Config.VersionNames): the hub's from
// schema:, another's from its own schema, each with Loom's status fields.
func VersionSchema(c config.Config, version string) (*apiextv1.JSONSchemaProps, error) {
	if version == c.HubVersion() {
		return parentSchema(c)
	}
	v, ok := c.Version(version)
	if !ok {
		return nil, fmt.Errorf("version %q: not a version of the set (%s)", version, strings.Join(c.VersionNames(), ", "))
	}
	vc := c
	vc.Schema = v.Schema
	if sc := scaleOf(c); sc != nil && v.Schema != nil {
		// Every version has the hub's scale subresource.
		vs := *v.Schema
		vs.Scale = sc
		vc.Schema = &vs
	}
	s, err := parentSchema(vc)
	if err != nil {
		return nil, fmt.Errorf("version %s: %w", version, err)
	}
	return s, nil
}
