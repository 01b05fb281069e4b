// Package deploy holds how Loom itself is installed: its Helm chart
// (chart/) and the single manifest rendered from it (loom.yaml, for
// `kubectl apply -f`).
//
// Render renders the chart the way `helm template` does, with Helm 4's SDK:
// load, merge the values over values.yaml, validate them against
// values.schema.json, execute the templates, and sort the documents in
// Helm's install order (Namespace first, Deployment after the RBAC it
// needs). Manifest joins them into one file. `make manifests` rewrites
// loom.yaml from the chart (the test that compares them, with -update),
// and the tests in this package lint the chart and check what it renders.
package deploy
