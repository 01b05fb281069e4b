package crd

import (
	"context"
	"testing"
)

// The API server's own CRD validation (structural schema, defaults valid
// and pruned, CEL rules compiled and within the cost budget, printer
// columns, names) accepts every test set's CRD.
func TestGeneratedCRDsPassAPIServerValidation(t *testing.T) {
	for name, c := range testSets(t) {
		t.Run(name, func(t *testing.T) {
			crd, err := generate(c)
			if err != nil {
				t.Fatalf("generate() = %v", err)
			}
			if err := Validate(context.Background(), crd); err != nil {
				t.Errorf("the API server would refuse the CRD:\n%v", err)
			}
		})
	}
}
