package childcache

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// ParentKey names a parent across kinds: the reader of a lookup, and
// what a change to what it read re-enqueues.
type ParentKey struct {
	GroupKind schema.GroupKind
	Name      cache.ObjectName
}

// objectKey names an object read, or with name "" a namespace listed.
type objectKey struct {
	gr              schema.GroupResource
	namespace, name string
}

// lookupIndex is the reverse index of templates' lookups: from each object
// read (or namespace listed) to the parents that read it, and from each
// parent to what it read. It does no I/O and takes no lock; lookupCache
// guards it.
type lookupIndex struct {
	readers map[objectKey]map[ParentKey]struct{}
	// reads are each parent's keys in readers: usually one or two, so a
	// slice, not a map per parent.
	reads map[ParentKey][]objectKey
}

func newLookupIndex() lookupIndex {
	return lookupIndex{readers: map[objectKey]map[ParentKey]struct{}{}, reads: map[ParentKey][]objectKey{}}
}

// watch records that parent p reads key.
func (ix *lookupIndex) watch(p ParentKey, key objectKey) {
	ps := ix.readers[key]
	if ps == nil {
		ps = map[ParentKey]struct{}{}
		ix.readers[key] = ps
	}
	ps[p] = struct{}{}
	if rs := ix.reads[p]; !slices.Contains(rs, key) {
		ix.reads[p] = append(rs, key)
	}
}

// replace makes read everything parent p reads: keys it read before but
// not this time stop being watched for it. It returns the keys that no
// parent reads any more.
func (ix *lookupIndex) replace(p ParentKey, read []objectKey) []objectKey {
	var unread []objectKey
	for _, key := range ix.reads[p] {
		if !slices.Contains(read, key) && ix.unwatch(p, key) {
			unread = append(unread, key)
		}
	}
	if len(read) == 0 {
		delete(ix.reads, p)
		return unread
	}
	ix.reads[p] = read
	return unread
}

// forget drops everything parent p read, and returns the keys that no
// parent reads any more.
func (ix *lookupIndex) forget(p ParentKey) []objectKey {
	var unread []objectKey
	for _, key := range ix.reads[p] {
		if ix.unwatch(p, key) {
			unread = append(unread, key)
		}
	}
	delete(ix.reads, p)
	return unread
}

// forgetKind drops everything the parents of kind gk read, and returns
// the keys that no parent reads any more.
func (ix *lookupIndex) forgetKind(gk schema.GroupKind) []objectKey {
	var unread []objectKey
	for p := range ix.reads {
		if p.GroupKind == gk {
			unread = append(unread, ix.forget(p)...)
		}
	}
	return unread
}

// unwatch drops p from key's readers, and key once no parent reads it,
// which it reports.
func (ix *lookupIndex) unwatch(p ParentKey, key objectKey) bool {
	ps := ix.readers[key]
	delete(ps, p)
	if len(ps) == 0 {
		delete(ix.readers, key)
		return true
	}
	return false
}

// watched reports whether any parent reads key.
func (ix *lookupIndex) watched(key objectKey) bool {
	_, ok := ix.readers[key]
	return ok
}

// readersOf returns the parents that read any of keys.
func (ix *lookupIndex) readersOf(keys ...objectKey) []ParentKey {
	var out []ParentKey
	for _, key := range keys {
		for p := range ix.readers[key] {
			out = append(out, p)
		}
	}
	return out
}
