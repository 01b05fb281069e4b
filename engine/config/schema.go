package config

import (
	"errors"
	"fmt"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Scopes a parent kind may have (ParentRef.Scope).
const (
	// ScopeNamespaced is the default: parents live in a namespace.
	ScopeNamespaced = "Namespaced"
	// ScopeCluster makes parents cluster-scoped.
	ScopeCluster = "Cluster"
)

// Schema is loom.yaml's schema block: the parent's API, from which Loom
// generates the parent's CustomResourceDefinition, defaults and validates
// specs offline, and checks what the templates read. It is given in one of
// two forms: the compact form (Spec and Status) or the full OpenAPI form
// (OpenAPIV3Schema).
type Schema struct {
	// Spec is the compact form of the parent's spec: each key is a field,
	// each value either a line "type | marker=value ..." or a map that
	// holds a nested object's fields.
	Spec map[string]any `json:"spec,omitempty"`
	// Status is the compact form of the status fields the status
	// template writes, besides those Loom owns.
	Status map[string]any `json:"status,omitempty"`
	// OpenAPIV3Schema is the full form: the parent object's schema, as in
	// a CRD version's schema.openAPIV3Schema. Loom adds its own status
	// fields to it.
	OpenAPIV3Schema *apiextv1.JSONSchemaProps `json:"openAPIV3Schema,omitempty"`
	// Scale gives the parent kind a scale subresource (see Scale), for
	// `kubectl scale` and HorizontalPodAutoscalers.
	Scale *Scale `json:"scale,omitempty"`
	// AllowBreakingChanges lets a schema change through that would break
	// parents already stored (a removed field some parent sets, a
	// narrowed type, a tightened constraint a parent violates, a new
	// required field without a default, a changed scope).
	AllowBreakingChanges bool `json:"allowBreakingChanges,omitempty"`
}

// validateParent checks the parent kind's names and scope.
func validateParent(p ParentRef) error {
	for field, name := range map[string]string{"plural": p.Plural, "singular": p.Singular} {
		if name == "" {
			continue
		}
		if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
			return fmt.Errorf("parent.%s: %q: %s", field, name, errs[0])
		}
	}
	for i, n := range p.ShortNames {
		if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
			return fmt.Errorf("parent.shortNames[%d]: %q: %s", i, n, errs[0])
		}
	}
	for i, n := range p.Categories {
		if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
			return fmt.Errorf("parent.categories[%d]: %q: %s", i, n, errs[0])
		}
	}
	switch p.Scope {
	case "", ScopeNamespaced, ScopeCluster:
	default:
		return fmt.Errorf("parent.scope: %q: must be %s or %s", p.Scope, ScopeNamespaced, ScopeCluster)
	}
	for i, c := range p.PrinterColumns {
		if c.Name == "" || c.JSONPath == "" || c.Type == "" {
			return fmt.Errorf("parent.printerColumns[%d]: name, type and jsonPath are required", i)
		}
	}
	return nil
}

// validateSchema checks that the schema block uses one form. The fields'
// types and markers are checked when the schema is compiled (engine/crd).
func validateSchema(s *Schema) error {
	if s == nil {
		return nil
	}
	compact := len(s.Spec) > 0 || len(s.Status) > 0
	switch {
	case compact && s.OpenAPIV3Schema != nil:
		return errors.New("schema: give either spec/status (the compact form) or openAPIV3Schema, not both")
	case !compact && s.OpenAPIV3Schema == nil:
		return errors.New("schema: needs spec (the compact form) or openAPIV3Schema")
	}
	return nil
}

// ScopeOrDefault is the parent kind's scope, Namespaced unless loom.yaml
// says Cluster.
func (p ParentRef) ScopeOrDefault() string {
	if p.Scope == "" {
		return ScopeNamespaced
	}
	return p.Scope
}
