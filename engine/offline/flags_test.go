package offline

// Every test binary accepts -update (go test ./... -update).
import _ "github.com/loom-operator/loom/internal/testflags"
