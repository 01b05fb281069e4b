package crd

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// requestNamespace stands for the namespace a request would name for a
// parent that names none: the API server takes it from the URL.
const requestNamespace = "default"

// generatedSuffix stands for the five characters the API server appends
// to a generateName (names.SimpleNameGenerator).
const generatedSuffix = "x0000"

// validateTypeMeta is customResourceValidator.ValidateTypeMeta.
func (a *Admitter) validateTypeMeta(u map[string]any) field.ErrorList {
	kind, _ := u["kind"].(string)
	apiVersion, _ := u["apiVersion"].(string)
	var errs field.ErrorList
	if kind != a.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), kind, fmt.Sprintf("must be %v", a.gvk.Kind)))
	}
	if gv := a.gvk.GroupVersion().String(); apiVersion != gv {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), apiVersion, fmt.Sprintf("must be %v", gv)))
	}
	return errs
}

// objectMeta decodes metadata as customresource.getObjectMeta does, and
// does what the API server does before validating it: a namespaced
// parent gets the request's namespace, a cluster-scoped one loses its
// namespace (rest.EnsureObjectNamespaceMatchesRequestNamespace), a
// generateName gets a generated name.
func (a *Admitter) objectMeta(meta map[string]any) (*metav1.ObjectMeta, field.ErrorList) {
	m := &metav1.ObjectMeta{}
	if meta == nil {
		return m, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(meta, m); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), meta, err.Error())}
	}
	switch {
	case !a.namespaced:
		m.Namespace = ""
	case m.Namespace == "":
		m.Namespace = requestNamespace
	}
	if m.Name == "" && m.GenerateName != "" {
		m.Name = m.GenerateName + generatedSuffix
	}
	return m, nil
}

// validateObjectMeta is customResourceValidator's create check of the
// metadata: the name a DNS subdomain, labels, annotations, owner
// references, finalizers and the rest of metav1.ObjectMeta.
func (a *Admitter) validateObjectMeta(ctx context.Context, meta map[string]any) field.ErrorList {
	m, errs := a.objectMeta(meta)
	if len(errs) > 0 {
		return errs
	}
	return metavalidation.ValidateObjectMetaDeclaratively(ctx, operation.Create, m, nil, a.namespaced,
		metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"),
		utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta))
}

// validatePathSegments is the check rest.ValidateCreate adds once the
// strategy's validation passed: the name must be usable in a URL path.
func (a *Admitter) validatePathSegments(meta map[string]any) field.ErrorList {
	m, errs := a.objectMeta(meta)
	if len(errs) > 0 {
		return errs
	}
	return metavalidation.ValidateObjectMetaAccessor(m, a.namespaced, validatePathSegment, field.NewPath("metadata"))
}

func validatePathSegment(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}
