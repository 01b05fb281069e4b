package crd

import (
	"errors"

	"github.com/loom-operator/loom/engine/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ErrNotImplemented is returned by the parts still being built.
var ErrNotImplemented = errors.New("not implemented")

// Generate builds the parent's CRD from a set's loom.yaml. A set without
// a schema gets a CRD whose spec is free-form
// (x-kubernetes-preserve-unknown-fields).
func Generate(c config.Config) (*apiextv1.CustomResourceDefinition, error) {
	return nil, ErrNotImplemented
}

// SpecSchema is the compiled schema of the parent's spec, or nil when the
// set has no schema.
func SpecSchema(c config.Config) (*apiextv1.JSONSchemaProps, error) {
	return nil, ErrNotImplemented
}
