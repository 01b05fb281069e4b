// Package v1alpha1 is Loom's own API, group loom.dev version v1alpha1:
// the TemplateSet, whose status is the rollout of one template set's
// revisions and whose spec is the user's controls of it, and the
// TemplateRevision, which keeps the files of one revision of a set.
//
// It holds the Go types of both kinds, their group, version and resource
// names, the labels and annotations Loom puts on them, the condition types
// and reasons of a TemplateSet's status, and the conversions between the
// types and the unstructured objects that the dynamic client and the
// informers hand around. The CRDs under crds/ are the schema the API
// server checks; the types here follow them field by field.
//
// Data flows one way through it: the controller (engine/controller) and
// loom rollout (cmd/loom) read an unstructured object from the cluster,
// turn it into a TemplateSet or a TemplateRevision with
// TemplateSetFromUnstructured or TemplateRevisionFromUnstructured, and
// turn the typed objects they build back with ToUnstructured before they
// write them. engine/rollout decides the status's rollout fields and
// speaks its phases and condition reasons; engine/rbac names the
// resources Loom must be allowed.
//
// The package imports no client and no other Loom package, so that any
// stage may name these kinds without pulling in the controller.
package v1alpha1
