// Package identity is who Loom acts as, and what it may not do.
//
// A set whose loom.yaml names a serviceAccountName has its children
// applied, pruned and released as that ServiceAccount of the parent's
// namespace: Accounts makes one Account per account, whose applier sends
// every request by impersonation over Loom's own connections. Lookups are
// still answered from Loom's shared caches, but only once a
// SubjectAccessReview says the account may make them (Authorize; the
// answers are kept for a while). The parent controller asks through
// Source, and carries a reconcile's Account in its context (WithAccount,
// FromContext):
//
//	reconcile ─► Source.Of(sa) ─► Account ─► WithAccount(ctx)
//	                                  │
//	lookup ─► Source.Authorize ───────┘ (SubjectAccessReview, kept)
//
// Permissions checks Loom's own account: of the permissions the running
// sets need (rbac.Generate), which it lacks, asked with
// SelfSubjectAccessReviews at start, after each reload and periodically;
// readiness reports them (Err).
package identity
