package doccache

import (
	"fmt"
	"testing"
)

// TestBounded checks that the cache is bounded by the bytes of its
// documents: it starts over when the next one would pass the budget, and
// never keeps a document larger than the budget.
func TestBounded(t *testing.T) {
	c := New(10)
	for i := range 5 {
		c.Put([]byte(fmt.Sprintf("doc%d", i)), map[string]any{"i": int64(i)}) // 4 bytes each
		if c.bytes > 10 || len(c.m) > 2 {
			t.Fatalf("after %d puts the cache holds %d entries, %d bytes; want at most 10 bytes", i+1, len(c.m), c.bytes)
		}
	}
	if d := c.Get([]byte("doc4")); d == nil || d["i"] != int64(4) {
		t.Errorf("Get(doc4) = %v, want the last put", d)
	}
	if d := c.Get([]byte("doc0")); d != nil {
		t.Errorf("Get(doc0) = %v, want it evicted", d)
	}
	c.Put([]byte("doc4"), map[string]any{}) // again: counted once
	if c.bytes != 4 {
		t.Errorf("a document put twice counts %d bytes, want 4", c.bytes)
	}
	c.Put([]byte("a document past the budget"), map[string]any{})
	if c.Get([]byte("a document past the budget")) != nil || c.Get([]byte("doc4")) == nil {
		t.Error("a document larger than the budget was kept, or emptied the cache")
	}
}
