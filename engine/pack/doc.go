// Package pack is the form in which Loom's informer caches keep objects:
// a Packed object holds the few metadata fields that key, index and route
// it, typed, and the rest as JSON, decoded again only when a reconcile
// reads it.
//
// Data flows in from the API server: the controller's packed client hands
// each list item and watch event's object (split from the event by
// WatchEventParts, without decoding it) to SlimJSON, for children, or to
// StripJSON, for parents. Both scan the server's JSON once and keep its
// bytes for every value they do not drop:
//
//   - SlimJSON keeps what Loom's decisions read of a child (Slim): its
//     identity, owners, labels, Loom's loom.dev/ annotations, the spec
//     fields kstatus reads and the status, and replaces managedFields with
//     the Fingerprint of Loom's own entry;
//   - StripJSON keeps all of a parent but its managedFields and kubectl's
//     last-applied copy (Strip).
//
// Pack, Slim and Strip do the same from an unstructured object (an apply's
// response, a test's fixture); TestPackJSONIsPackOfDecoded holds the two
// paths to the same result. Fingerprint and OwnEntry read the managedFields
// entry of a field manager, which is how the apply stage tells, exactly,
// whether another writer took a field from Loom.
//
// The scanner trusts the framing of its input: client-go's watch decoder
// hands it one complete JSON value per event, so it validates structure
// only as far as it reads; a malformed frame is refused with an error,
// never read past its end.
//
// The package imports no client and no other stage but object.
package pack
