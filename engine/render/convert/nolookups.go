package convert

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrLookup refuses a lookup in a conversion template.
var ErrLookup = errors.New("a conversion template cannot look up objects: a conversion is a function of the parent alone")

// NoLookups is the lookup reader (engine/render's Reader) of a
// conversion template: it refuses every lookup with ErrLookup.
type NoLookups struct{}

// Get refuses.
func (NoLookups) Get(schema.GroupVersionKind, string, string) (map[string]any, error) {
	return nil, ErrLookup
}

// List refuses.
func (NoLookups) List(schema.GroupVersionKind, string) ([]map[string]any, error) {
	return nil, ErrLookup
}

// Namespaced refuses.
func (NoLookups) Namespaced(schema.GroupVersionKind) (bool, error) { return false, ErrLookup }
