// Package controller wires Loom's stages into a Kubernetes controller.
//
// A Manager loads every template set under a folder and runs one parent
// controller per parent kind. Each follows kubernetes/sample-controller:
//
//	parent informer ─┐                         ┌─► render (engine/render)
//	child informers ─┼─► rate-limited queue ─► │─► apply + prune (engine/apply)
//	template watcher ┘   (namespace/name)      └─► status (engine/status)
//
// Event handlers only enqueue. A child event is mapped to its parent through
// the controller ownerReference (after checking the owner's UID). Parent
// updates that only touch status are ignored, so Loom's own status writes
// never cause another reconcile. Child informers are started lazily, the
// first time a template renders a kind, and cache only Loom's children.
//
// Parent updates are compared by UID first: a new UID under a known name
// (a parent deleted and created again while the watch was down) is a new
// object. A parent kind without metadata.generation (a built-in kind such
// as ConfigMap) is compared on every top-level field but status. What a
// controller keeps per parent is dropped when the parent goes.
//
// Each controller runs on one goroutine of the Manager, reading its parents
// in their storage version (begin converts each to the hub). One that
// replaces another of its kind (a parent or storage version switch, a set
// removed and added back) starts once the other's reconciles finish.
//
// Errors decide retries: a broken template or spec is reported in the
// parent's status and waits for the spec or the template to change; a
// transient API error is retried with backoff; a child kind the cluster
// does not serve waits for CRDs to change.
//
// The child informers and the lookup cache are one cluster's
// childcache.Cache (engine/controller/childcache), which the controllers
// reach through the childCache interface (cache.go); both it and the
// parent informers list and watch through engine/controller/packwatch.
// Charts' seeds are kept by engine/controller/seed.
// A parent's finalizers, and what Loom does when it is deleted, are
// engine/controller/finalizer's (finalizer.Guards, built in finalize.go).
// Parents' statuses are written by engine/controller/statuswriter, which
// a controller reaches through the statusWriter interface (parent.go).
//
// A parent controller (Controller) reaches the Manager only through
// Shared (shared.go), the clients, caches and settings the Manager hands
// to each controller it starts; the Manager drives a controller only
// through the methods of lifecycle.go (NewController, Run, UseSet,
// KindsChanged, NotStarted, Stalled, ...).
//
// Health (health.go) is read from the same state: Ready once the sets are
// loaded, the CRD cache has synced and every controller whose parent kind
// is served runs; Live unless a controller has parents queued and its
// workers have neither taken nor finished a reconcile for twice the
// reconcile timeout.
package controller
