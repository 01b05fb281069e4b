package shard

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
)

// LabelBucket is the label Loom puts on each child: the decimal bucket of
// its parent's UID (BucketLabel), so that a member can watch the children
// of its own parents only (LabelSelector).
const LabelBucket = "loom.dev/shard-bucket"

// FieldUID is the field a shard selector hashes: the object's
// metadata.uid, in KEP-5866's object-rooted syntax.
const FieldUID = "object.metadata.uid"

// bucketShift turns a 64-bit hash into its bucket: the top six bits.
const bucketShift = 64 - 6

// hashEnd is the exclusive end of the hash space, 2^64, the one bound the
// API server accepts with 17 hex digits.
const hashEnd = "0x10000000000000000"

// Bucket returns the bucket of an object with this UID: the top six bits of
// the 64-bit FNV-1a hash of the UID, the hash the API server's shard
// selector compares (sharding.HashField).
func Bucket(uid types.UID) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid)) // a hash.Hash never returns an error
	return int(h.Sum64() >> bucketShift)
}

// BucketLabel returns the LabelBucket value of a child whose parent has
// this UID: the parent's bucket in decimal.
func BucketLabel(uid types.UID) string { return strconv.Itoa(Bucket(uid)) }

// Matches reports whether an object with this UID falls in one of s's
// buckets. Unlike the API server, which lists everything when no selector
// is given, the empty set matches nothing.
func Matches(s Set, uid types.UID) bool { return s.Has(Bucket(uid)) }

// Requirements returns the KEP-5866 shard ranges that cover exactly s's
// buckets: one [start, end) range over FieldUID's hash per run of adjacent
// buckets, ascending, with 16-digit lowercase hex bounds, the end of bucket
// 63 being 0x10000000000000000. The empty set has none.
func Requirements(s Set) []sharding.ShardRangeRequirement {
	runs := s.runs()
	reqs := make([]sharding.ShardRangeRequirement, 0, len(runs))
	for _, r := range runs {
		reqs = append(reqs, sharding.ShardRangeRequirement{
			Key:   FieldUID,
			Start: bucketStart(r.lo),
			End:   bucketStart(r.hi + 1),
		})
	}
	return reqs
}

// Selector returns the shardSelector text for s, as the API server's own
// sharding.Selector writes it:
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x0800000000000000') || shardRange(...)
//
// with one shardRange per run of adjacent buckets, so All is one range
// over the whole hash space.
//
// The empty set gives "": the API server reads a missing shardSelector as
// everything (and refuses an empty one), so a caller must not list or
// watch with the selector of an empty set; it should hold nothing instead.
func Selector(s Set) string {
	if s == 0 {
		return ""
	}
	return sharding.NewSelector(Requirements(s)...).String()
}

// LabelSelector returns label selector text that selects the children of
// s's parents by LabelBucket, such as "loom.dev/shard-bucket in (0,1,2)",
// written by apimachinery's labels package (which sorts the values as
// strings: 0,1,10,11,...,2). As with Selector, the empty set gives "",
// which selects everything; a caller must not list with it.
func LabelSelector(s Set) string {
	if s == 0 {
		return ""
	}
	values := make([]string, 0, s.Len())
	for _, b := range s.Buckets() {
		values = append(values, strconv.Itoa(b))
	}
	req, err := labels.NewRequirement(LabelBucket, selection.In, values)
	if err != nil {
		// The key is a constant and the values are small decimals; the
		// tests build every bucket's requirement.
		panic(fmt.Sprintf("shard: label requirement for %s: %v", s, err))
	}
	return labels.NewSelector().Add(*req).String()
}

// bucketStart returns the first hash of bucket b as the API server writes a
// bound: "0x" and 16 lowercase hex digits, or hashEnd for b == Buckets.
func bucketStart(b int) string {
	if b == Buckets {
		return hashEnd
	}
	return fmt.Sprintf("0x%016x", uint64(b)<<bucketShift)
}
