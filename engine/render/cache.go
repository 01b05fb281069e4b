package render

import "sync"

// defaultCacheBytes bounds each template file's decode cache by the bytes
// of the documents it keeps; their decoded form takes many times as much
// (measure it with a heap profile of make bench before raising it). 64 KiB
// holds the documents of a few dozen parents for the shipped Deployment:
// enough for the reconciles a child event or a status write triggers soon
// after a render. Past that the cache starts over, and renders take the
// cold path.
const defaultCacheBytes = 64 << 10

// decodeCache remembers decoded and validated documents by their exact
// bytes. Re-rendering a parent whose spec did not change yields the same
// bytes, so a reconcile or resync skips YAML decoding and validation. The
// cached objects are never handed out; callers receive deep copies. The
// cache is bounded by the bytes of its keys, so that a fleet of large
// documents cannot grow it past its budget.
type decodeCache struct {
	mu       sync.RWMutex
	maxBytes int
	bytes    int
	m        map[string]*decoded
}

// decoded is a cached, validated document, before injection. Only
// documents that decoded and validated cleanly are cached.
type decoded struct {
	obj map[string]any
}

func newDecodeCache(maxBytes int) *decodeCache {
	return &decodeCache{maxBytes: maxBytes, m: make(map[string]*decoded)}
}

func (c *decodeCache) get(key []byte) *decoded {
	c.mu.RLock()
	d := c.m[string(key)] // no allocation: the compiler special-cases this
	c.mu.RUnlock()
	return d
}

func (c *decodeCache) put(key []byte, d *decoded) {
	if len(key) > c.maxBytes {
		return
	}
	c.mu.Lock()
	if c.bytes+len(key) > c.maxBytes {
		c.m = make(map[string]*decoded, len(c.m))
		c.bytes = 0
	}
	if _, ok := c.m[string(key)]; !ok {
		c.m[string(key)] = d
		c.bytes += len(key)
	}
	c.mu.Unlock()
}
