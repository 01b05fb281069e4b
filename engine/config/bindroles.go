package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
)

// BindRole names a role that a binding the set renders may refer to from
// a computed roleRef (loom.yaml's bindRoles). Loom is granted bind on it,
// by name: whoever may create a parent may bind it to any subject in the
// parent's namespace (with a RoleBinding) or in the cluster (with a
// ClusterRoleBinding).
type BindRole struct {
	// Kind is Role or ClusterRole.
	Kind string `json:"kind"`
	// Name is the role's name.
	Name string `json:"name"`
}

// Allows reports whether the list holds the role of kind and name.
func Allows(roles []BindRole, kind, name string) bool {
	for _, r := range roles {
		if r.Kind == kind && r.Name == name {
			return true
		}
	}
	return false
}

// validateBindRoles checks loom.yaml's bindRoles.
func validateBindRoles(roles []BindRole) error {
	for i, r := range roles {
		if r.Kind != "Role" && r.Kind != "ClusterRole" {
			return fmt.Errorf("bindRoles[%d].kind %q: must be Role or ClusterRole", i, r.Kind)
		}
		if r.Name == "" {
			return fmt.Errorf("bindRoles[%d].name is required", i)
		}
		if errs := path.IsValidPathSegmentName(r.Name); len(errs) > 0 {
			return fmt.Errorf("bindRoles[%d].name %q: %s", i, r.Name, strings.Join(errs, "; "))
		}
	}
	return nil
}
