//go:build e2e

package e2e

// Every test binary accepts -update (go test ./... -update).
import _ "github.com/loom-operator/loom/internal/testflags"
