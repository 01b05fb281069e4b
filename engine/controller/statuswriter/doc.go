// Package statuswriter writes the status of a parent controller's parents
// (engine/controller): one Writer per parent kind.
//
// A reconcile hands Write what engine/status computes the status from;
// Write fills in the parent's previous status, computes the new one
// (status.Compute) and applies it to the status subresource only when it
// differs (status.Equal), then records an Event on each transition of the
// Ready and Degraded conditions (events.go). A chart's rendered notes join
// the input through WithNotes.
//
// A status write triggers no reconcile, and the parent cache delivers its
// echo some time later: until then the Writer remembers what it wrote, so
// that the next reconcile compares against that (Previous) and not the
// stale cached status. The controller tells it which versions the cache
// delivered (CaughtUp) and which parents went (Forget). A parent whose CRD
// has no status subresource is said once, in a Warning Event, and its
// status writes are skipped until a CRD changes (RetryNoStatus). The
// Writer keeps this per-parent memory under a lock of its own.
package statuswriter
