package shard

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
)

// Plan decides which buckets self should claim and release, given the
// table as last read, the IDs of the live members and those of the gone
// members (each in any order; "" and repeats are ignored). A member is
// gone when the runtime made sure it no longer writes: its Lease deleted
// by this replica, or found missing, and its deadline passed. A member
// that is neither (its Lease expired but not yet fenced, or missing from
// the cache but not yet confirmed gone) keeps its buckets: nobody claims
// them and it has no quota. It is a function of its inputs only. The
// runtime writes the result with compare-and-swap, rereads the table and
// plans again when the write loses a race.
//
// The rules, which the runtime relies on:
//
//   - If self is "" (a free bucket's owner, not a member), Plan does
//     nothing. If self is not live, it claims nothing and releases every
//     bucket self holds.
//   - Every live member has a quota (Quota); the quotas sum to Buckets.
//   - A bucket is claimable when it is free or held by a gone member that
//     is not live. Plan never claims a bucket a live member holds (self
//     included) or one a member neither live nor gone holds, never
//     releases one self does not hold, and never claims and releases at
//     once.
//   - Over its quota, self releases the excess and claims nothing. It
//     releases whole runs of adjacent buckets, shortest run first, and
//     otherwise a block at one end of a run (see pickRelease), so that
//     its ranges never grow in number and what it gives up stays in blocks
//     a claimant can take as whole ranges.
//   - Under its quota, self claims claimable buckets up to the quota (or
//     as many as there are), each time preferring a bucket next to one it
//     holds or is claiming, so its ranges stay few; then one in its home,
//     the range it would hold if the members split 0-63 in ID order, so
//     members starting at once claim disjoint ranges; then the bucket
//     with the highest rendezvous score for self, so that two members
//     claiming at once mostly pick different buckets (see pickClaim).
//   - At its quota, self does nothing.
//
// Live members applying Plan in turn, each to the table the one before
// wrote, therefore reach within two rounds a table where every bucket is
// held by a live member and each holds exactly its quota (within n+1
// rounds when they plan at once and writes lose races); and no bucket
// moves that balance does not require: a member keeps min(held, quota) of
// the buckets it had.
func Plan(t Table, self string, live, gone []string) (claim, release Set) {
	if self == "" {
		return 0, 0
	}
	held := t.Of(self)
	members := liveMembers(live)
	pos, isLive := slices.BinarySearch(members, self)
	if !isLive {
		return 0, held
	}
	quota := quotaAt(pos, len(members))
	switch n := held.Len(); {
	case n > quota:
		return 0, pickRelease(held, n-quota, scores(self))
	case n < quota:
		return pickClaim(held, claimable(t, members, liveMembers(gone)), home(pos, len(members)), quota-n, scores(self)), 0
	}
	return 0, 0
}

// Quota returns how many buckets self should hold among the live members:
// with the n distinct live IDs sorted, the member at position i gets
// Buckets/n, plus one if i < Buckets%n. It is 0 if self is not live.
func Quota(self string, live []string) int {
	members := liveMembers(live)
	pos, isLive := slices.BinarySearch(members, self)
	if self == "" || !isLive {
		return 0
	}
	return quotaAt(pos, len(members))
}

func quotaAt(pos, n int) int {
	q := Buckets / n
	if pos < Buckets%n {
		q++
	}
	return q
}

// liveMembers returns live sorted, without "" and repeats.
func liveMembers(live []string) []string {
	members := slices.DeleteFunc(slices.Clone(live), func(m string) bool { return m == "" })
	slices.Sort(members)
	return slices.Compact(members)
}

// claimable returns the buckets that are free or held by a member of the
// sorted gone that is not in the sorted members.
func claimable(t Table, members, gone []string) Set {
	var s Set
	for b, m := range t {
		_, isLive := slices.BinarySearch(members, m)
		_, isGone := slices.BinarySearch(gone, m)
		if m == "" || isGone && !isLive {
			s = s.Add(b)
		}
	}
	return s
}

// scores returns the rendezvous score of (self, b) for every bucket b: the
// 64-bit FNV-1a hash of self+"/"+b, passed through SplitMix64's finalizer
// (mix). Members rank the buckets differently, so members choosing at once
// mostly choose different buckets. The finalizer matters: FNV-1a treats
// each byte with an xor and a multiply, so the hashes of two IDs followed
// by the same "/b" stay correlated, and without mix two members picked
// the same of 16 buckets 2.2 to 2.4 times as often as chance, for ordinal,
// pod-name and other IDs alike (TestPickClaimSpreads).
func scores(self string) [Buckets]uint64 {
	var out [Buckets]uint64
	for b := range out {
		h := fnv.New64a()
		_, _ = h.Write([]byte(self + "/" + strconv.Itoa(b))) // never fails
		out[b] = mix(h.Sum64())
	}
	return out
}

// pickClaim chooses k buckets of free for a member that holds held, one at
// a time, each the highest-scoring bucket of the first non-empty tier:
//
//  1. free buckets next to what it holds or has chosen, inside its home;
//  2. free buckets next to what it holds or has chosen;
//  3. free buckets inside its home;
//  4. any free bucket.
//
// Tiers 1 and 2 make each claim extend a range instead of starting one, so
// the member's selector stays short. Tier 3 is what makes members that
// start at once from an empty table, as the replicas of a new Deployment
// do, claim disjoint ranges: each takes exactly its home, one range, with
// no lost compare-and-swap. Without it they would each start from their
// best-scoring bucket and grow runs that collide: in a simulation of 3 to 8
// members planning at once, two to five rounds to settle instead of one. The score decides within a tier, so members that are
// left to tier 4 at once mostly start in different places.
func pickClaim(held, free, home Set, k int, score [Buckets]uint64) Set {
	var claim Set
	for ; k > 0 && free != 0; k-- {
		next := free & held.Union(claim).neighbours()
		for _, candidates := range []Set{next & home, next, free & home, free} {
			if candidates != 0 {
				b := highest(candidates, score)
				claim = claim.Add(b)
				free = free.Remove(b)
				break
			}
		}
	}
	return claim
}

// home returns the buckets the member at position pos of n live members
// holds in the table that gives the members, in order of position,
// consecutive ranges of their quotas: 0-21, 22-42 and 43-63 for three.
// It only guides claims; held buckets never move to reach it.
func home(pos, n int) Set {
	lo := 0
	for i := range pos {
		lo += quotaAt(i, n)
	}
	return run{lo, lo + quotaAt(pos, n) - 1}.set()
}

// pickRelease chooses k buckets of held to give up. It takes the shortest
// run of held first: releasing a whole run removes one range from the
// member's selector, and the shortest run is the one most likely to fit in
// what must go. When the run is longer than what is left to release, it
// releases that many from one end, the end whose bucket scores lower, so
// what the member keeps is still one run and what it gives up is one
// contiguous block that a claimant can take as one range. It never splits
// a run, so the member's ranges never grow in number. Among runs of equal
// length, the one whose lower-scoring end scores lowest goes first.
func pickRelease(held Set, k int, score [Buckets]uint64) Set {
	var release Set
	keep := held
	for k > 0 {
		runs := keep.runs()
		r := slices.MinFunc(runs, func(a, b run) int {
			if a.len() != b.len() {
				return a.len() - b.len()
			}
			return cmp.Compare(endScore(a, score), endScore(b, score))
		})
		switch {
		case r.len() <= k:
			// the whole run
		case score[r.lo] < score[r.hi]:
			r.hi = r.lo + k - 1
		default:
			r.lo = r.hi - k + 1
		}
		release = release.Union(r.set())
		keep = keep.Minus(r.set())
		k -= r.len()
	}
	return release
}

// endScore is the lower score of r's two end buckets.
func endScore(r run, score [Buckets]uint64) uint64 {
	return min(score[r.lo], score[r.hi])
}

// highest returns the bucket of s (not empty) with the highest score; on
// equal scores, the lowest bucket.
func highest(s Set, score [Buckets]uint64) int {
	found := -1
	for _, b := range s.Buckets() {
		if found < 0 || score[b] > score[found] {
			found = b
		}
	}
	return found
}

// mix is the finalizer of SplitMix64 (Steele, Lea and Flood, 2014): every
// bit of x affects every bit of the result.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
