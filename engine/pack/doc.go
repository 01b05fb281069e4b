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
// The scanner checks a value's structure only as far as it reads it:
// literals and numbers are skipped to their delimiter, not parsed, so it
// accepts some malformed JSON (it never reads past its input's end, and
// FuzzPackJSON holds it to never panicking). It relies on being handed
// well-formed JSON: on a watch, client-go's JSON framer decodes each frame
// as a json.RawMessage, which refuses malformed JSON before a packer sees
// it (TestPackedWatchStreamRefusesAMalformedFrame, in the controller, pins
// this); a list's body is the API server's own encoding.
//
// The package imports no client and no other stage but object.
package pack
