// Package childcache is one cluster's cache of Loom's children and of
// what templates look up there (Cache).
//
// Child informers (children.go) run one per child group-resource, started
// the first time a template renders that kind (Ensure), each selecting
// only Loom's children and holding them packed (packwatch). Their events
// feed an index by controller owner (owners.go), which answers Owned, and
// are routed to the owner's controller (Config.Route). On a sharded
// replica each informer lists the children of the buckets the replica
// holds (generations.go): when they change (Keep), a new generation of
// each kind's informer lists the new set and, once synced, replaces the
// old one. Until then reconciles read the old one, and the new one routes
// only the children the old one does not hold as they are, so that a
// move re-reconciles no parent the replica kept.
//
// Lookups (lookups.go, lookupreader.go) are answered by a Reader per
// reconcile: metadata-only informers (lookuppool.go) say whether an object
// exists and at which resourceVersion, its content is read once with a
// GET and kept while it is current, and the reverse index (lookupindex.go)
// from each object read to the parents that read it re-enqueues them
// (Config.Enqueue) when it changes.
//
// Data flows from the API server into the informers, and out as copies:
// nothing here writes to the cluster, and a Cache keeps no state outside
// itself, so that a second cluster can have a Cache of its own.
package childcache
