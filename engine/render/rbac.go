package render

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/rbac/roles"
)

// Roles returns the roles the set's templates write and the roleRefs of
// its bindings, as their text shows them (see roles.Scan).
func (s *Set) Roles() roles.Found { return s.roles }

// placed is a rendered child and the document it was rendered from.
type placed struct {
	obj  *unstructured.Unstructured
	file string
	line int
}

// checkRBAC checks the RBAC children of one render, unless a
// ServiceAccount writes the children (its own RBAC then decides). Loom
// holds bind only on the roles a set names literally or lists in
// bindRoles, and holds only the rules the set's roles write literally
// (the API server lets it write no other): a binding may refer only to
// those roles or to a role the same render writes, and a role may hold
// only those rules. Otherwise whoever writes a parent's spec could bind,
// or write into a role, whatever any set lets Loom bind or hold.
func (s *Set) checkRBAC(kids []placed) error {
	if s.Config.ServiceAccountName != "" {
		return nil
	}
	for _, k := range kids {
		var err error
		switch k.obj.GetKind() {
		case "RoleBinding", "ClusterRoleBinding":
			err = s.checkRoleRef(k, kids)
		case "Role", "ClusterRole":
			err = s.checkRules(k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRoleRef checks the roleRef of the binding b against what the set
// may bind.
func (s *Set) checkRoleRef(b placed, kids []placed) error {
	kind, _, _ := unstructured.NestedString(b.obj.Object, "roleRef", "kind")
	name, _, _ := unstructured.NestedString(b.obj.Object, "roleRef", "name")
	if config.Allows(s.Config.BindRoles, kind, name) {
		return nil
	}
	for _, r := range s.roles.Refs {
		if !r.Computed() && r.Kind == kind && r.Name == name {
			return nil
		}
	}
	for _, k := range kids {
		if k.obj.GetKind() == kind && k.obj.GetName() == name && k.obj.GroupVersionKind().Group == rbacv1.GroupName &&
			(kind == "ClusterRole" || k.obj.GetNamespace() == b.obj.GetNamespace()) {
			return nil
		}
	}
	// The roleRef's name line, or the roleRef line of a flow mapping.
	line := s.findKeyLine(b.file, b.line, "roleRef")
	if _, rest, _ := strings.Cut(s.sourceLine(b.file, line), "roleRef:"); strings.TrimSpace(rest) == "" {
		line = s.findKeyLine(b.file, line, "name")
	}
	return &Error{File: b.file, Line: line, Object: objectName(b.obj.Object), Err: fmt.Errorf(
		"roleRef %s %q is not a role this set may bind: a roleRef must name a role the set's templates name literally, a role the same render writes, or one that %s's bindRoles lists", kind, name, config.File)}
}

// sourceLine returns line (1-based) of file's source, or "".
func (s *Set) sourceLine(file string, line int) string {
	lines := strings.Split(string(s.source(file)), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	return lines[line-1]
}

// checkRules checks that every rule of the role r is covered by the rules
// the set's templates write literally.
func (s *Set) checkRules(r placed) error {
	raw, _, _ := unstructured.NestedSlice(r.obj.Object, "rules")
	literal := s.roles.Rules()
	for i, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue // validation reports it
		}
		var rule rbacv1.PolicyRule
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &rule); err != nil {
			continue // validation reports it
		}
		if missing := roles.Uncovered(literal, rule); missing != "" {
			return &Error{File: r.file, Line: s.findKeyLine(r.file, r.line, "rules"), Object: objectName(r.obj.Object), Err: fmt.Errorf(
				"rules[%d]: %s is not among the rules the set's templates write literally: Loom writes a role only with those (a rule a template computes from the parent's spec could grant whatever Loom holds)", i, missing)}
		}
	}
	return nil
}
