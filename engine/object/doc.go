// Package object is the small vocabulary every stage speaks about a child:
// its identity (Ref: group, kind, namespace and name, never the version),
// what the apply stage did to it (Action, Result, ChangeSet), why Loom
// refused to write it (OwnedByAnotherError, NotAdoptedError), and the
// labels and annotations that mark whose it is.
//
// It imports no client, so pure stages (render, depend, status) can name a
// child without pulling in client-go's dynamic client, as cli-utils'
// pkg/object does for kstatus, apply and prune alike. Data flows one way:
// apply produces Results; depend, status and the controller read them.
package object
