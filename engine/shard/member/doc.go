// Package member keeps one replica's membership of a sharded Loom group and
// the buckets of parents it holds (see package shard for buckets, the
// table and Plan).
//
// Each replica renews a Lease of its own (labelled loom.dev/shard-group
// and loom.dev/shard-role=member, named by its ID) every RenewInterval. A
// second Lease, the group's table (<group>-shards, role=table), names in
// an annotation the member that holds each bucket. A replica changes the
// table only by a compare-and-swap update (the resourceVersion it read),
// so two replicas never both claim a bucket.
//
// The rules that keep two replicas from writing for one parent:
//
//  1. A replica writes for a parent only while the parent's bucket is in
//     its held set and its own Lease is valid by its own monotonic clock:
//     until the start of its last successful renewal plus LeaseDuration
//     minus a margin. Others count its Lease as expired only LeaseDuration
//     after they saw that renewal, which is later.
//  2. A bucket enters the held set only after this replica's table update
//     naming it succeeded. It leaves the held set before the table is
//     told: on a release, no new work is entered for it, the work in
//     flight finishes (Enter's gate), and then it leaves; on a lapse of
//     the replica's own Lease, at once, and the replica takes a new ID (its
//     old table entries are then a dead member's).
//  3. A replica claims a bucket another member holds only if that member
//     is gone, and its deadline (LeaseDuration after the last renewal
//     this replica saw, or after it found the Lease missing if it saw
//     none) has passed. Gone means that this replica made sure of it:
//     it deleted the member's Lease, expired in its view, with the
//     resourceVersion it saw as a precondition (the delete fails if the
//     member renewed meanwhile, so a renewal this replica has not seen
//     yet cannot be overtaken), or the API server answered NotFound for
//     it. A fence that fails otherwise (a timeout, 429, 5xx) proves
//     nothing, and a Lease missing from the cache (deleted by hand) is
//     asked for before its buckets move.
//
// Leases of one namespace reach a replica in resourceVersion order on one
// watch, so a member's Lease is seen before any table entry naming it.
package member
