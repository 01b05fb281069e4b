// Package convert turns a parent of one version of a set's API into the
// same parent in another version: the conversion that Loom's webhook
// serves, that `loom render -f` applies to a parent in any served version,
// and that `loom test` checks round trip by round trip.
//
// It is pure: New compiles each version's structural schema (the API
// server's own pruning code reads it) and checks each declarative move's
// paths against the schemas; Convert reads no cluster and no disk.
//
// Data flows through the hub, the version the templates read:
//
//	parent (version A) ──► A→hub: A's moves in order, or its toHub template
//	                   ──► pruned by the hub's structural schema
//	                   ──► hub→B: B's moves inverted in reverse order, or its
//	                       fromHub template
//	                   ──► pruned by B's structural schema
//	                   ──► parent (version B)
//
// What neither the moves nor a template mention stays at its path, when the
// target's schema has it. What a version cannot hold is not lost: Convert
// also converts its result back (B→A, the raw trip) and keeps each field of
// A that the trip does not give back in the annotation DataAnnotation, under
// the key A, the way Kubernetes' and Cluster API's conversions keep
// fields a version lacks, with what the trip gave there. A later
// conversion to A restores those paths where the conversion still gives
// what it gave then (an edit made in B in between wins), and removes the
// key. Metadata other than that annotation is never changed
// (the API server refuses a conversion that changes it); apiVersion becomes
// group/B. A template conversion renders the spec alone; status moves by
// the moves, or stays at its paths.
//
// Templates are run by engine/render, which parses them with the set
// (errors at file:line, the render's deadline and output cap, no lookups):
// this package sees them through the Templates interface. A conversion
// by templates has a deadline (Timeout) and a size limit (MaxObjectBytes);
// one by moves is bounded by the parent it converts. The conversion data
// of every conversion is bounded too (MaxDataBytes).
//
// RoundTrip checks a parent through every other version and back, as
// `loom test` does for each golden parent.
package convert
