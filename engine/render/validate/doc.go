// Package validate checks one rendered object before anything reaches a
// cluster: apiVersion, kind and a valid metadata.name, and, for the kinds
// built into Kubernetes, that the object decodes strictly into its
// k8s.io/api type (a misspelt field, or a string where an int belongs,
// fails with a FieldError naming the field's path). Most objects are
// checked against a shape of their Go type, built once per type, without
// decoding them (shape.go). It is pure: no I/O, no template.
package validate
