// Package modes holds the values of Loom's management and drift modes,
// shared by the leaves that name them (engine/object's annotations and
// engine/config's loom.yaml) without either importing the other.
package modes

import (
	"fmt"
	"strings"

	"github.com/loom-operator/loom/internal/suggest"
)

// The management modes (object.AnnotationManage, loom.yaml's manage).
const (
	Full       = "full"
	CreateOnly = "create-only"
	Observe    = "observe"
	Patch      = "patch"
)

// Manages are the management modes, the default first.
var Manages = []string{Full, CreateOnly, Observe, Patch}

// The drift modes (object.AnnotationDrift, loom.yaml's drift.mode).
const (
	Repair = "repair"
	Warn   = "warn"
)

// Drifts are the drift modes, the default first.
var Drifts = []string{Repair, Warn}

// Check returns an error unless v is one of values; what names the
// setting ("loom.dev/manage", "manage:"). The error suggests the value v
// is a typo of.
func Check(what, v string, values []string) error {
	for _, want := range values {
		if v == want {
			return nil
		}
	}
	msg := fmt.Sprintf("%s is %q; it must be one of %s", what, v, strings.Join(values, ", "))
	if s := suggest.Nearest(v, values); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return fmt.Errorf("%s", msg)
}
