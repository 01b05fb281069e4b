// Package metrics is Loom's Prometheus metrics: reconciles and their
// duration, child changes, status writes, drift reverted, template sets
// and their reloads, the rollouts' series, missing RBAC permissions, the
// lookup cache's gauges, and loom_parents.
//
// The Manager makes one Metrics (New) on the registry cmd/loom serves;
// each parent controller observes into it, and counts its parents by
// status.state with a ParentStates, a handler of its parent informer's
// events, which it joins to loom_parents (ParentsCollector.Track) while
// it runs.
package metrics
