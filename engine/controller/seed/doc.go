// Package seed keeps the seed of each parent whose chart calls a random
// or generating function, and the values those functions made, in a
// Secret of the parent's namespace (Store), so that every Loom process,
// after a restart or a change of leader, renders the same values.
//
// Data flow: the parent controller's lookup reader asks Store.Seed for a
// parent's seed before a render (reading, migrating or making its
// Secret), and Store.Keep writes the values a render generated before the
// children holding them are applied. The parent carries the seed's
// fingerprint (AnnotationSeed); a seed Secret that was deleted or
// replaced under it is a *LostError (the parent is Degraded, SeedLost)
// until AnnotationAcceptNewSeed accepts a new seed. Writing the
// annotation on the parent is the parent controller's.
package seed
