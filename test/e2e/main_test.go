//go:build e2e

// Package e2e tests Loom's controller against the real API server of the
// local cluster (make cluster). Each test runs its own controller in
// process, limited to a namespace of its own, so tests run in parallel
// without seeing each other's objects. Tests reach the cluster through
// env.From(t).
package e2e

import (
	"testing"
	"time"

	"github.com/loom-operator/loom/test/env"
)

func TestMain(m *testing.M) {
	env.Main(m, env.Options{
		Suite:           "e2e",
		Hint:            "The e2e tests need the local cluster: run them with `make test`, or `make cluster` first.",
		SetupTimeout:    60 * time.Second,
		NamespacePrefix: "e2e-",
	})
}
