// Package crd turns a template set's schema (loom.yaml's schema block)
// into the parent's API, with no cluster:
//
//   - generate.go compiles the compact or OpenAPI form into a structural
//     schema and builds the parent's CustomResourceDefinition (Generate),
//     with Loom's own status fields (loomstatus.go), printer columns
//     (columns.go) and names (names.go); compact.go and markers.go parse
//     the compact form's lines ("integer | default=1 minimum=0");
//     versions.go makes one CRD version per version the set serves, and
//     the conversion webhook's clientConfig;
//   - admit.go does to a parent what the API server does to a custom
//     resource on create: prune unknown fields, apply defaults, validate
//     (OpenAPI and CEL rules), using k8s.io/apiextensions-apiserver;
//   - breaking.go compares an installed CRD with a generated one and
//     names the changes that would break parents already stored.
//
// It imports no client: cmd/loom (loom crd, render, test) and the
// controller (--install-crds) do the I/O.
package crd
