// Package packwatch lists and watches resources for Loom's informers with
// each object packed (engine/pack) straight from the API server's JSON:
// children slimmed to what Loom reads of them (Child), parents stripped of
// managedFields (Parent). A Client shares the HTTP client of Loom's other
// clients; NewInformer builds an informer on it whose store holds
// *pack.Packed objects, which ID and Unpack read back.
//
// Data flows one way: API server JSON → packedDecoder (or
// watchEventDecoder, for a watch frame) → PackFunc → informer store.
// Nothing here writes.
package packwatch
