// Package offline renders template sets with no cluster: it is what `loom
// render`, `loom test` and `loom init` run. Parents read from files are
// first admitted as the API server would admit them (Admission: pruned,
// defaulted, validated by the set's schema); lookups are answered from a
// file of objects (ReadLookups); and each parent goes through the
// controller's own pipeline (engine/pipeline: render, then the dependency
// decision), so that only the children the controller would apply now are
// printed, and what waits is said (RenderParents). The registered
// workload clusters are the Secrets of the lookups file in Loom's
// namespace (Clusters, --loom-namespace), read as the controller reads
// them from the cluster; no kubeconfig is read.
//
// It also runs the golden-file tests of template sets (Run): each case in
// a set's tests folder is an input parent, NAME.yaml, the exact objects it
// must render, NAME.golden.yaml, and optionally the objects its lookups
// find, NAME.lookups.yaml. In a set that serves several versions, a case's
// parent may be in any of them, and each case's parent is also converted
// to every other version and back (convert.RoundTrip), which must give it
// back as it was.
package offline
