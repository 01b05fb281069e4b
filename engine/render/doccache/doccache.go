// Package doccache remembers the decoded, validated documents of a
// template file's output by their exact bytes. Re-rendering a parent whose
// spec did not change yields the same bytes, so a reconcile or resync
// skips YAML decoding and validation (engine/render keeps one Cache per
// child template file). The cached objects are never handed out: callers
// copy what Get returns before changing it. A Cache is bounded by the
// bytes of its keys, so that a fleet of large documents cannot grow it
// past its budget.
package doccache

import "sync"

// DefaultBytes bounds each template file's cache by the bytes of the
// documents it keeps; their decoded form takes many times as much
// (measure it with a heap profile of make bench before raising it). 64 KiB
// holds the documents of a few dozen parents for the shipped Deployment:
// enough for the reconciles a child event or a status write triggers soon
// after a render. Past that the cache starts over, and renders take the
// cold path.
const DefaultBytes = 64 << 10

// Cache maps a document's bytes to its decoded, validated object. It is
// safe for concurrent use.
type Cache struct {
	mu       sync.RWMutex
	maxBytes int
	bytes    int
	m        map[string]map[string]any
}

// New returns an empty Cache that keeps at most maxBytes of documents.
func New(maxBytes int) *Cache {
	return &Cache{maxBytes: maxBytes, m: make(map[string]map[string]any)}
}

// Get returns the object decoded from key, or nil. The caller must not
// change it.
func (c *Cache) Get(key []byte) map[string]any {
	c.mu.RLock()
	obj := c.m[string(key)] // no allocation: the compiler special-cases this
	c.mu.RUnlock()
	return obj
}

// Put keeps obj, decoded and validated from key, unless key alone is
// past the budget. When the cache would pass it, it starts over.
func (c *Cache) Put(key []byte, obj map[string]any) {
	if len(key) > c.maxBytes {
		return
	}
	c.mu.Lock()
	if c.bytes+len(key) > c.maxBytes {
		c.m = make(map[string]map[string]any, len(c.m))
		c.bytes = 0
	}
	if _, ok := c.m[string(key)]; !ok {
		c.m[string(key)] = obj
		c.bytes += len(key)
	}
	c.mu.Unlock()
}
