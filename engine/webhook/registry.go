package webhook

import (
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Converter converts a set's parents between the versions the set serves
// (the contract engine/convert implements).
type Converter interface {
	// Convert returns obj (a parent, any served version) in version
	// toVersion (a version name such as "v1"), a new object; obj is not
	// changed. Errors name the set's file:line where a template or move
	// is at fault.
	Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error)
}

// Registry holds the Converter of each parent kind, by group-kind (never
// by version: every version of a kind is one kind). It is safe for
// concurrent use: the Manager registers while the Handler reads.
type Registry struct {
	mu    sync.RWMutex
	kinds map[schema.GroupKind]Converter
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{kinds: map[schema.GroupKind]Converter{}}
}

// Set registers c as gk's converter, replacing any other; a nil c removes
// gk.
func (r *Registry) Set(gk schema.GroupKind, c Converter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c == nil {
		delete(r.kinds, gk)
		return
	}
	r.kinds[gk] = c
}

// Delete removes gk's converter: its set was unloaded, or serves one
// version now.
func (r *Registry) Delete(gk schema.GroupKind) { r.Set(gk, nil) }

// Get returns gk's converter, or nil.
func (r *Registry) Get(gk schema.GroupKind) Converter {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.kinds[gk]
}

// Kinds lists the registered group-kinds, sorted.
func (r *Registry) Kinds() []schema.GroupKind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]schema.GroupKind, 0, len(r.kinds))
	for gk := range r.kinds {
		out = append(out, gk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
