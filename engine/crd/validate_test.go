package crd

import (
	"context"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
)

// The API server's own CRD validation (structural schema, defaults valid
// and pruned, CEL rules compiled and within the cost budget, printer
// columns, names) accepts every test set's CRD. The validation package
// is imported by tests only: it would add megabytes to the operator.
func TestGeneratedCRDsPassAPIServerValidation(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	for name, c := range testSets(t) {
		t.Run(name, func(t *testing.T) {
			crd, err := Generate(c)
			if err != nil {
				t.Fatalf("Generate() = %v", err)
			}
			v1 := crd.DeepCopy()
			scheme.Default(v1)
			var internal apiextensions.CustomResourceDefinition
			if err := scheme.Convert(v1, &internal, nil); err != nil {
				t.Fatal(err)
			}
			if errs := validation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) > 0 {
				t.Errorf("the API server would refuse the CRD:\n%v", errs.ToAggregate())
			}
		})
	}
}
