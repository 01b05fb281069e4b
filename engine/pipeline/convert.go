package pipeline

// A parent's versions: the version the API server stores parents in,
// which every reader of parents lists and watches, and the conversion of
// each parent read there to the hub, the version the templates read.

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// Converter converts a parent between the versions its set serves
// (engine/render/convert's; a set with several versions exposes one).
type Converter interface {
	// Convert returns obj (a parent, any served version) in version
	// toVersion (a version name such as "v1"), a new object; obj is not
	// changed. Errors name the set's file:line where a template or move
	// is at fault.
	Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error)
}

// ConverterOf returns set's converter (render.Set.Converter): nil for a
// set with one version, never a nil pointer in a non-nil Converter.
func ConverterOf(set *render.Set) Converter {
	if cv := set.Converter(); cv != nil {
		return cv
	}
	return nil
}

// StorageGVK is set's parent kind in the version the API server stores
// parents in (loom.yaml's storageVersion, or the hub). Loom lists,
// watches and writes parents in it: the API server converts nothing, so
// no conversion webhook stands between a stored parent and its reconcile.
func StorageGVK(set *render.Set) schema.GroupVersionKind {
	gvk := set.ParentGVK()
	gvk.Version = set.Config.StorageVersionOrHub()
	return gvk
}

// ToVersion returns parent in version (a version name such as "v1"):
// parent itself when it is in that version already, else conv's
// conversion of it, a new object. parent is not changed. A conversion
// that fails, or that a set with no converter would need, is a
// *ConversionError.
func ToVersion(conv Converter, parent *unstructured.Unstructured, version string) (*unstructured.Unstructured, error) {
	from := parent.GroupVersionKind().Version
	if from == version {
		return parent, nil
	}
	fail := func(err error) error {
		return &ConversionError{Kind: parent.GetKind(), Namespace: parent.GetNamespace(), Name: parent.GetName(), From: from, To: version, Err: err}
	}
	if conv == nil {
		return nil, fail(errors.New("the set has no conversion between its versions"))
	}
	out, err := conv.Convert(parent, version)
	if err != nil {
		return nil, fail(err)
	}
	return out, nil
}

// ConversionError is a parent that could not be converted from one
// version to another. As a render error, it gives the Degraded reason
// ConversionFailed (status.Reasoned).
type ConversionError struct {
	Kind, Namespace, Name string
	// From and To are the versions.
	From, To string
	// Err is the converter's error, which names the set's file and line.
	Err error
}

// Error names the parent, the versions and the cause.
func (e *ConversionError) Error() string {
	return fmt.Sprintf("convert %s %s/%s from %s to %s: %v", e.Kind, e.Namespace, e.Name, e.From, e.To, e.Err)
}

// Unwrap returns the converter's error.
func (e *ConversionError) Unwrap() error { return e.Err }

// Reason is the Degraded reason a parent that cannot be converted gives.
func (e *ConversionError) Reason() string { return status.ReasonConversionFailed }
