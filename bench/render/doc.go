// Package renderbench compares the cost of turning one parent into its
// children with Loom's engine (engine/render) and with Helm's
// (helm.sh/helm/v3/pkg/engine, then sigs.k8s.io/yaml to decode each
// manifest, as a Helm-based operator must before it can apply).
//
// Both render the same three templates: templates/myresource in this
// repository, and testdata/chart, the same files with .Values for .Spec and
// .Release.Name for .Name. See docs/explanation/benchmarks.md for how to run and read them.
package renderbench
