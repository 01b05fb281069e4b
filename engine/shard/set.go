package shard

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Buckets is the number of buckets the 64-bit hash space is split into.
// Bucket b holds the hashes whose top six bits are b, that is the range
// [b<<58, (b+1)<<58).
const Buckets = 64

// Set is a set of buckets: bit b set means bucket b is in the set.
type Set uint64

// All returns the set of every bucket.
func All() Set { return Set(^uint64(0)) }

// Has reports whether bucket b is in s. It is false for b outside
// [0, Buckets).
func (s Set) Has(b int) bool {
	return b >= 0 && b < Buckets && s&(1<<uint(b)) != 0
}

// Add returns s with bucket b. It panics if b is outside [0, Buckets), as
// an index out of range does.
func (s Set) Add(b int) Set { return s | bit(b) }

// Remove returns s without bucket b. It panics if b is outside
// [0, Buckets).
func (s Set) Remove(b int) Set { return s &^ bit(b) }

// Union returns the buckets in s or in o.
func (s Set) Union(o Set) Set { return s | o }

// Minus returns the buckets in s and not in o.
func (s Set) Minus(o Set) Set { return s &^ o }

// Len returns the number of buckets in s.
func (s Set) Len() int { return bits.OnesCount64(uint64(s)) }

// Buckets returns the buckets in s in ascending order; nil when s is
// empty.
func (s Set) Buckets() []int {
	var out []int
	for v := uint64(s); v != 0; v &= v - 1 {
		out = append(out, bits.TrailingZeros64(v))
	}
	return out
}

// String returns s as ascending comma-separated runs of adjacent buckets,
// a run of one as "7" and a longer one as "9-10": "0-3,7,9-10". The empty
// set is "". ParseSet reads it back.
func (s Set) String() string {
	parts := make([]string, 0, 4)
	for _, r := range s.runs() {
		if r.lo == r.hi {
			parts = append(parts, strconv.Itoa(r.lo))
		} else {
			parts = append(parts, strconv.Itoa(r.lo)+"-"+strconv.Itoa(r.hi))
		}
	}
	return strings.Join(parts, ",")
}

// ParseSet reads the form String writes. It also accepts parts in any
// order and spaces around a part, but refuses a bucket named twice, a
// bucket outside 0-63, a reversed range and an empty part; the error names
// the part.
func ParseSet(text string) (Set, error) {
	var s Set
	if strings.TrimSpace(text) == "" {
		return 0, nil
	}
	for part := range strings.SplitSeq(text, ",") {
		r, err := parseRun(strings.TrimSpace(part))
		if err != nil {
			return 0, fmt.Errorf("parse bucket set %q: part %q: %w", text, part, err)
		}
		for b := r.lo; b <= r.hi; b++ {
			if s.Has(b) {
				return 0, fmt.Errorf("parse bucket set %q: part %q: bucket %d named twice", text, part, b)
			}
			s = s.Add(b)
		}
	}
	return s, nil
}

// run is the inclusive range of adjacent buckets lo..hi.
type run struct{ lo, hi int }

func (r run) len() int { return r.hi - r.lo + 1 }

// set returns the buckets of r.
func (r run) set() Set {
	var s Set
	for b := r.lo; b <= r.hi; b++ {
		s = s.Add(b)
	}
	return s
}

// runs returns the maximal runs of adjacent buckets in s, ascending. Bucket
// 63 and bucket 0 are not adjacent: the hash ranges do not wrap.
func (s Set) runs() []run {
	var out []run
	for b := 0; b < Buckets; b++ {
		if !s.Has(b) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].hi == b-1 {
			out[n-1].hi = b
		} else {
			out = append(out, run{b, b})
		}
	}
	return out
}

// neighbours returns the buckets outside s adjacent to a bucket of s.
func (s Set) neighbours() Set { return (s<<1 | s>>1) &^ s }

func bit(b int) Set {
	if b < 0 || b >= Buckets {
		panic(fmt.Sprintf("shard: bucket %d out of range [0, %d)", b, Buckets))
	}
	return 1 << uint(b)
}

// parseRun reads "7" or "9-10".
func parseRun(part string) (run, error) {
	if part == "" {
		return run{}, fmt.Errorf("empty part")
	}
	loText, hiText, isRange := strings.Cut(part, "-")
	lo, err := parseBucket(loText)
	if err != nil {
		return run{}, err
	}
	if !isRange {
		return run{lo, lo}, nil
	}
	hi, err := parseBucket(hiText)
	if err != nil {
		return run{}, err
	}
	if hi < lo {
		return run{}, fmt.Errorf("range %d-%d is reversed", lo, hi)
	}
	return run{lo, hi}, nil
}

// parseBucket reads a bucket number: decimal digits only, 0 to 63.
func parseBucket(text string) (int, error) {
	if text == "" || strings.Trim(text, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a bucket number", text)
	}
	b, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("bucket %q: %w", text, err)
	}
	if b >= Buckets {
		return 0, fmt.Errorf("bucket %d is out of range 0-%d", b, Buckets-1)
	}
	return b, nil
}
