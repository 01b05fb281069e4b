// Package shard holds the decisions of Loom's sharding (loom run
// --sharded), where several replicas, the members, share the parents. It
// is pure: no clients, no goroutines, no clock. The runtime reads and
// writes the table, tracks which members are live, and watches with the
// selectors this package writes; the tests need no cluster.
//
// # Buckets
//
// A parent belongs to a bucket: the top six bits of the 64-bit FNV-1a
// hash of its metadata.uid (Bucket). That is the hash the API server's
// shard selector of KEP-5866 compares (k8s.io/apimachinery/pkg/sharding),
// so Buckets = 64 buckets split the hash space into 64 contiguous ranges
// of 2^58 hashes each, and a Set of buckets translates exactly into a
// shardSelector (Selector, Requirements) that the API server evaluates for
// a member's list and watch of parents. Children carry their parent's
// bucket in the LabelBucket label (BucketLabel), so a member selects its
// parents' children with an ordinary label selector (LabelSelector).
//
// # Contiguous buckets
//
// A shardSelector is an OR of hash ranges, shardRange(object.metadata.uid,
// start, end), and Selector writes one range per run of adjacent buckets
// (bucket 63 and bucket 0 are not adjacent: the ranges do not wrap). A
// member holding 0-21 sends one range; one holding 22 scattered buckets
// would send 22. So Plan keeps each member's buckets in few runs: it claims
// next to what the member holds, or else inside its home (the range it
// would hold if the members split 0-63 in ID order, which also keeps
// members starting at once out of each other's way), and it releases whole
// runs or the ends of runs, never splitting one.
//
// # The table
//
// A Table says, for each bucket, which member holds it ("" = free). The
// runtime keeps it encoded (Encode, DecodeTable) as an annotation on a
// Lease and changes it only by compare-and-swap, so two members never
// write over each other's claim.
//
// # Quotas and Plan
//
// Each member, from the table and the lists of live and gone members,
// decides what to claim and release with Plan. The live IDs are sorted; with n of them
// the member at position i has a quota of 64/n buckets, plus one if
// i < 64%n, so the quotas sum to 64 (Quota). A member over its quota
// releases the excess; one under it claims free buckets and those of
// gone members: members the runtime fenced, whose deadline passed. A
// member that is neither live nor gone keeps its buckets. Data flows one
// way:
//
//	table (decoded from the Lease) + live members + gone members
//	    ──► Plan(table, self, live, gone) ──► claim, release
//	    ──► runtime: compare-and-swap of table.Apply(self, claim, release)
//	    ──► table.Of(self) ──► Selector (parents), LabelSelector (children)
package shard
