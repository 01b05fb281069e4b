// Package transport holds the round trippers every request of Loom's
// clients goes through: a deadline for the response to begin
// (ResponseDeadline), and, on a sharded replica, the guard that refuses a
// write for a parent this replica no longer owns (ShardGuard), told which
// parent by the request's context (WithParentUID).
package transport
