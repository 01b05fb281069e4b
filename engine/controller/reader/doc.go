// Package reader is what one reconcile's templates read: the render.Reader
// that answers their lookups from a cluster's child cache (package
// childcache), as the set's ServiceAccount when it names one (package
// identity), with the parent's seed (package seed) and the cluster's
// capabilities for a chart's .Capabilities.
//
// A reader records the first failure of the environment (a list, a seed
// or discovery that the cluster could not answer), which the reconcile
// retries instead of treating it as a broken template.
package reader
