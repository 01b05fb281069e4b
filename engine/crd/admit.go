package crd

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// Admitter does to a parent what the API server does to a custom resource
// of the CRD on create: prune, default, validate. It is built once per CRD
// (compiling the schema and its CEL rules is the expensive part) and is
// safe for concurrent use.
//
// It mirrors the apiextensions-apiserver's create path, calling the same
// library code in the same order:
//
//  1. decode (customresource_handler.go, unstructuredSchemaCoercer): read
//     the ObjectMeta, prune fields the structural schema does not know,
//     drop nulls that are neither nullable nor defaulted, coerce embedded
//     resources' metadata;
//  2. default (structural defaulting);
//  3. create (registry/customresource/strategy.go): drop status when the
//     status subresource is on, then validate: type meta, object meta,
//     OpenAPI schema, embedded resources, list-type invariants and, unless
//     an earlier error blocks them, the x-kubernetes-validations rules.
//
// Only the storage version is prepared: a parent of another version is
// refused as the API server refuses a kind it does not serve.
type Admitter struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	hasStatus  bool
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
}

// NewAdmitter prepares the CRD's storage version for Admit.
func NewAdmitter(crd *apiextv1.CustomResourceDefinition) (*Admitter, error) {
	version, err := apihelpers.GetCRDStorageVersion(crd)
	if err != nil {
		return nil, fmt.Errorf("crd %s: %w", crd.Name, err)
	}
	val, err := apihelpers.GetSchemaForVersion(crd, version)
	if err != nil {
		return nil, fmt.Errorf("crd %s: %w", crd.Name, err)
	}
	if val == nil || val.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("crd %s: version %s has no schema", crd.Name, version)
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
		return nil, fmt.Errorf("crd %s: convert schema to internal version: %w", crd.Name, err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("crd %s: schema is not structural: %w", crd.Name, err)
	}
	// As the API server does (crdHandler.getOrCreateServingInfoFor): a copy,
	// without the defaults that pruning would remove anyway.
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("crd %s: prune defaults: %w", crd.Name, err)
	}
	validator, _, err := validation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("crd %s: schema validator: %w", crd.Name, err)
	}
	sub, err := apihelpers.GetSubresourcesForVersion(crd, version)
	if err != nil {
		return nil, fmt.Errorf("crd %s: %w", crd.Name, err)
	}
	return &Admitter{
		gvk: schema.GroupVersionKind{
			Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind,
		},
		namespaced: crd.Spec.Scope == apiextv1.NamespaceScoped,
		hasStatus:  sub != nil && sub.Status != nil,
		structural: s,
		validator:  validator,
		// The same per-call limit the API server gives each rule
		// (customresource.NewStrategy).
		cel: cel.NewValidator(s, true, celconfig.PerCallLimit),
	}, nil
}

// GroupVersionKind is the kind Admit admits: the CRD's storage version.
func (a *Admitter) GroupVersionKind() schema.GroupVersionKind { return a.gvk }

// Admit returns the parent as the API server would store it on create
// (unknown fields pruned, defaults applied, status dropped when the CRD has
// the status subresource), or the API server's error when it would refuse
// it: an apierrors.StatusError whose message is the API server's, such as
//
//	MyResource.example.loom.dev "web" is invalid: spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"
//
// The metadata is kept as given: what the API server adds (uid,
// generation, creationTimestamp) is not invented, but it is validated as
// on create (the name a DNS subdomain, and so on). A parent that names no
// namespace, or only a generateName, is validated as if the request had
// supplied them. obj is not modified.
func (a *Admitter) Admit(obj map[string]any) (map[string]any, error) {
	out, _, err := a.AdmitWithWarnings(obj)
	return out, err
}

// AdmitWithWarnings is Admit, and also returns the warnings the API server
// sends back (and kubectl prints) for the fields it pruned, one for each,
// such as `unknown field "spec.replcas"`.
func (a *Admitter) AdmitWithWarnings(obj map[string]any) (map[string]any, []string, error) {
	u, err := asDecoded(obj)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	name := nameOf(u)
	if errs := a.validateTypeMeta(u); len(errs) > 0 {
		return nil, nil, apierrors.NewInvalid(a.gvk.GroupKind(), name, errs)
	}
	meta, unknown, err := a.decode(u)
	if err != nil {
		// As the API server's handlers report a body they cannot decode.
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
			a.gvk.Kind, a.gvk.Version, a.gvk.Kind, err))
	}
	var warnings []string
	for _, path := range unknown {
		warnings = append(warnings, fmt.Sprintf("unknown field %q", path))
	}
	structuraldefaulting.Default(u, a.structural)
	if a.hasStatus {
		delete(u, "status") // create cannot set status
	}
	if errs := a.validate(u, meta); len(errs) > 0 {
		return nil, warnings, apierrors.NewInvalid(a.gvk.GroupKind(), name, errs)
	}
	if meta != nil {
		u["metadata"] = meta
	}
	return u, warnings, nil
}

// asDecoded returns a copy of obj as the API server's JSON decoder would
// see it: whole numbers are int64, other numbers float64 (a YAML reader
// may give float64 for both, and the CEL rules and the int32 format check
// tell them apart).
func asDecoded(obj map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u := map[string]any{}
	if err := utiljson.Unmarshal(raw, &u); err != nil {
		return nil, err
	}
	return u, nil
}

// nameOf is the name the API server's error names: metadata.name, or
// empty when the parent has only a generateName.
func nameOf(u map[string]any) string {
	meta, _ := u["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return name
}

// decode is what the API server's decoder does to a custom resource
// (unstructuredSchemaCoercer.apply): metadata must decode as ObjectMeta,
// unknown fields are pruned, non-nullable nulls without a default are
// dropped, embedded resources' metadata is coerced. It returns the
// parent's metadata as given (nil when it has none), for Admit to put
// back, and the paths of the unknown fields, in the API server's order.
func (a *Admitter) decode(u map[string]any) (map[string]any, []string, error) {
	meta, _ := u["metadata"].(map[string]any)
	_, _, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, nil, err
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u, a.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, a.structural)
	ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u, a.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if ferr != nil {
		return nil, nil, ferr
	}
	unknown = append(unknown, paths...)
	if meta != nil {
		u["metadata"] = meta
	}
	return meta, unknown, nil
}

// validate runs customResourceStrategy.Validate and then the generic
// object meta check rest.ValidateCreate adds when that passes.
func (a *Admitter) validate(u map[string]any, meta map[string]any) field.ErrorList {
	ctx := context.Background()
	errs := a.validateObjectMeta(ctx, meta)
	errs = append(errs, validation.ValidateCustomResource(nil, u, a.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u, a.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, a.structural, u)...)
	if a.cel != nil { // nil when the schema has no x-kubernetes-validations
		if blocked, err := hasBlockingErr(errs); blocked {
			errs = append(errs, err)
		} else {
			celErrs, _ := a.cel.Validate(ctx, nil, a.structural, u, nil, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)
		}
	}
	if len(errs) == 0 {
		errs = a.validatePathSegments(meta)
	}
	return errs
}

// hasBlockingErr is the API server's rule (registry/customresource): CEL
// rules are not run on an object with errors that make them meaningless.
func hasBlockingErr(errs field.ErrorList) (bool, *field.Error) {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong,
			field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return false, nil
}
