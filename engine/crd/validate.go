package crd

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
)

// scheme defaults and converts CRDs as the API server does before it
// validates them.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// Validate runs the API server's own validation of a new CRD
// (apiextensions-apiserver's ValidateCustomResourceDefinition, after the
// v1 defaults): the schema's types, formats and structure, defaults valid
// against their schema and enum, CEL rules compiled and within the cost
// budget, printer columns and names. The error lists every field the API
// server would refuse, with its path, as kubectl would print them.
func Validate(ctx context.Context, crd *apiextv1.CustomResourceDefinition) error {
	v1 := crd.DeepCopy()
	scheme.Default(v1)
	var internal apiextensions.CustomResourceDefinition
	if err := scheme.Convert(v1, &internal, nil); err != nil {
		return fmt.Errorf("convert CustomResourceDefinition %s to the internal version: %w", crd.Name, err)
	}
	if errs := validation.ValidateCustomResourceDefinition(ctx, &internal); len(errs) > 0 {
		return fmt.Errorf("the API server would refuse CustomResourceDefinition %s: %w", crd.Name, errs.ToAggregate())
	}
	return nil
}
