package config

import (
	"fmt"
	"strings"

	"github.com/loom-operator/loom/internal/modes"
)

// Drift is loom.yaml's drift: what Loom does, by default for the set's
// children, when another writer changed a field a template sets.
type Drift struct {
	// Mode is repair (the default: the field is taken back) or warn (it is
	// left as it is, and the parent says so); a child's loom.dev/drift
	// annotation overrides it.
	Mode string `json:"mode,omitempty"`
	// Ignore lists, per kind, field paths that Loom sets when it creates
	// a child and never takes back afterwards (see
	// loom.dev/drift-ignore, which a child adds its own to).
	Ignore []DriftIgnore `json:"ignore,omitempty"`
}

// DriftIgnore is one entry of Drift.Ignore.
type DriftIgnore struct {
	// APIVersion, when set, matches the child's group/version.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind matches the child's kind; required.
	Kind string `json:"kind"`
	// Name, when set, matches the child's name exactly.
	Name string `json:"name,omitempty"`
	// Paths are the field paths, such as spec.replicas.
	Paths []string `json:"paths"`
}

// validateManagement checks loom.yaml's manage and drift.
func validateManagement(c *Config) error {
	if c.Manage != "" {
		if err := modes.Check("manage", c.Manage, modes.Manages); err != nil {
			return err
		}
	}
	if c.Drift == nil {
		return nil
	}
	if c.Drift.Mode != "" {
		if err := modes.Check("drift.mode", c.Drift.Mode, modes.Drifts); err != nil {
			return err
		}
	}
	for i, ig := range c.Drift.Ignore {
		if ig.Kind == "" {
			return fmt.Errorf("drift.ignore[%d].kind is required", i)
		}
		if len(ig.Paths) == 0 {
			return fmt.Errorf("drift.ignore[%d].paths: name at least one field path", i)
		}
		for j, p := range ig.Paths {
			if strings.TrimSpace(p) == "" || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") {
				return fmt.Errorf("drift.ignore[%d].paths[%d]: %q is not a field path such as spec.replicas", i, j, p)
			}
		}
	}
	return nil
}
