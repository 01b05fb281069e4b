// Package env is the harness that the cluster test suites (test/e2e and
// test/faults) share: one Env per test binary, holding the clients of the
// local cluster, the kubeconfig and the repository's paths (bin/loom, the
// CRDs, the shipped templates), and the workload cluster's clients
// (Env.Workload: a second, bare control plane, found through
// LOOM_E2E_WORKLOAD_KUBECONFIG or .cluster-workload/kubeconfig; a test
// that needs it calls NeedWorkload, which fails without it).
//
// A suite's TestMain is one call, env.Main, which connects to the cluster,
// installs the CRDs and runs the tests; each test reaches the cluster
// through env.From(t), which returns that Env. The Env is set once, before
// any test runs, and never changes, so the suites hold no package globals of
// their own. The Env also names the steps every suite repeats: a namespace
// of the test's own, reading an object, its Events, applying a CRD and
// reading a testdata fixture.
package env
