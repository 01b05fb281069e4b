package main

import (
	"os"
	"runtime/debug"

	"k8s.io/klog/v2"
)

// defaultGCPercent is the GOGC that loom run uses when the environment
// sets none. Go's default, 100, lets the heap grow to twice what is live
// between collections, and a pod's memory limit sees that peak. Most of
// Loom's live heap is its caches, which no collection frees, so 50 cuts
// the peak by about a third for a few more collections (docs/explanation/benchmarks.md, Converge:
// at 10 000 parents the converge time did not grow, as the API server,
// not Loom's CPU, bounds it).
const defaultGCPercent = 50

// setGCPercent applies defaultGCPercent unless GOGC is set in the
// environment (any value, "off" included), which the runtime has applied.
func setGCPercent(logger klog.Logger) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(defaultGCPercent)
	logger.V(1).Info("Set the garbage collector's target", "GOGC", defaultGCPercent)
}
