package crd

import (
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Admitter does to a parent what the API server does to a custom resource
// of the CRD on create: prune, default, validate.
type Admitter struct{}

// NewAdmitter prepares the CRD's storage version for Admit.
func NewAdmitter(crd *apiextv1.CustomResourceDefinition) (*Admitter, error) {
	return nil, ErrNotImplemented
}

// Admit returns the parent as the API server would store it, or the
// API server's error when it would refuse it.
func (a *Admitter) Admit(obj map[string]any) (map[string]any, error) {
	return nil, ErrNotImplemented
}
