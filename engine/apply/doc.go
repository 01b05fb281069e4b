// Package apply is the stage that makes the cluster match the rendered
// children: it server-side applies each child with one field manager, skips
// children whose live state is exactly what Loom last applied, refuses to
// take over objects that are not Loom's, and prunes children that no longer
// render, or releases them (Release) when the template keeps them
// (loom.dev/delete-policy: orphan): one conditional JSON patch that removes
// only Loom's owner references, labels, hash and field manager.
//
// Data flows in as desired objects (from render) and live objects (from the
// controller's informer caches); it flows out as a ChangeSet, one Result per
// object, saying what was done (created, configured, unchanged, pruned,
// orphaned or failed). Logs, conditions and metrics are derived from those values.
//
// Objects are identified by group, kind, namespace and name (Ref), never by
// version: a child rendered at autoscaling/v1 and cached at autoscaling/v2
// is one child.
//
// Skipping unchanged children is what makes steady state silent, and the
// decision is exact. For each child Loom applied, the Applier remembers the
// hash of the desired object and a fingerprint of Loom's managedFields
// entry in the server's response. The API server takes a field out of that
// entry whenever another writer changes or removes it (an Update, a patch,
// a forced apply), so while the live object has the same UID, the same hash
// annotation and the same fingerprint, every field Loom sets holds what Loom
// applied; otherwise the child is applied again, and the fields Loom took
// back are reported as drift. Values are never compared, so no server
// normalisation can hide a change or fake one. For a child it has no
// record of (a new process), the Applier computes the entry its apply
// would leave, with the API server's own field manager code and the
// type's OpenAPI schema (WithOpenAPI, expect.go), and sends nothing when
// the child carries that entry and the hash of the desired object.
//
// A child may ask for less than a repair (drift.go): in drift mode warn
// (loom.dev/drift) a child another writer changed is not applied while its
// desired object is the same; the fields its apply would own and its live
// entry lacks are reported (Result.Drifted). Fields it names in
// loom.dev/drift-ignore are left out of every apply after the create once
// Loom no longer owns them, and such a child is unchanged when Loom's entry
// is exactly what that smaller apply leaves.
//
// A child the cache does not hold, whatever Loom remembers of its name,
// is created by an apply that only creates (a resourceVersion
// precondition no stored object meets); when the API server refuses it
// because the name is taken, the Applier reads
// the object: an existing object is adopted only when it is this parent's already
// (its controller reference or ApplySet label) or carries the
// loom.dev/adopt annotation naming the parent; otherwise the child fails
// with NotAdoptedError and nothing is written.
package apply
