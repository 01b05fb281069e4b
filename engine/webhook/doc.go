// Package webhook serves the conversion webhook of the parents' CRDs: the
// API server POSTs a ConversionReview (apiextensions.k8s.io/v1) to
// /convert when a client asks for a parent in a version other than the one
// it is stored in, and Loom answers with the objects converted by the set
// that owns the kind.
//
// Data flows one way:
//
//	POST /convert ──► size limit (MaxBody) ──► decode the review (v1 only)
//	    ──► the Registry's Converter for the objects' group-kind
//	    ──► Convert each object, one by one, under the review's deadline,
//	        a panic recovered ──► all converted: Success; one failed: Failure
//	        with the converter's message, and no object at all
//
// The Registry maps a parent's group-kind to its set's Converter; the
// Manager registers a set with several versions when it loads and removes
// it when it unloads. The Handler holds no state of its own but the
// Registry and its metrics, so every replica (leader, standby, sharded
// member) serves it: the API server may call any of them. Serve listens
// with TLS, its certificate taken for each handshake from a func the
// caller gives (engine/webhook/certs rotates it without a restart).
//
// A review is all or nothing: the API server stores or returns every
// object of a review or none, so one failed object fails the review and
// nothing is stored half-converted.
package webhook
