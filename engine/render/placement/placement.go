// Package placement decides which cluster each rendered child may go to:
// the registered workload clusters a set may use (loom.yaml's clusters,
// over the registrations the caller hands in), what templates see of them
// (.Clusters), and whether a child's loom.dev/cluster annotation names one
// of them (Check).
//
// It is pure: the caller (the controller's registry, or the Secrets of a
// file offline) gives the registrations, and nothing here reads a cluster
// or a kubeconfig; templates see the clusters' names and labels only.
// Data flows one way: registrations + loom.yaml → Clusters → the render's
// .Clusters and its check of each child.
package placement

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
)

// ErrNotRegistered marks a child aimed at a cluster that no Secret
// registers (or that two Secrets register, so that its name is
// ambiguous). Registering the cluster makes the render succeed.
var ErrNotRegistered = errors.New("cluster not registered")

// ErrNotAllowed marks a child aimed at a registered cluster that the set
// may not use: loom.yaml's clusters neither names it nor selects it.
var ErrNotAllowed = errors.New("cluster not allowed")

// Clusters is what one render knows of the workload clusters: those its
// set may use, and every name that is registered. The zero value knows no
// cluster: every child must go to the cluster Loom runs in.
type Clusters struct {
	allowed    []cluster.Registration // sorted by name
	registered map[string]bool
	ambiguous  map[string]error // names two Secrets register, with Index's error
	// meant are the names the rule allows by name, or whose registrations
	// (any of them, for a name two Secrets register) its selector
	// matches: for those alone Check says why the name is not usable
	// (not registered, registered twice). For any other name it says only
	// that the set may not use it, so that a parent, whose spec may choose
	// the cluster, cannot learn which clusters other sets' teams have.
	meant map[string]bool
	rule  *config.Clusters
}

// New is what a render of set with loom.yaml's clusters rule (nil: none
// allowed) knows of the registrations regs. A name that two Secrets
// register is left out (cluster.Index) and refused with Index's error. It
// fails only on a selector that loom.yaml's validation would refuse.
func New(regs []cluster.Registration, rule *config.Clusters) (Clusters, error) {
	if len(regs) == 0 {
		return Clusters{rule: rule}, nil // most renders: nothing to index
	}
	byName, errs := cluster.Index(regs)
	c := Clusters{registered: make(map[string]bool, len(byName)), rule: rule}
	unique := make([]cluster.Registration, 0, len(byName))
	for name, reg := range byName {
		c.registered[name] = true
		unique = append(unique, reg)
	}
	var dup []string
	for _, reg := range regs {
		if _, ok := byName[reg.Name]; !ok && !slices.Contains(dup, reg.Name) {
			dup = append(dup, reg.Name)
		}
	}
	slices.Sort(dup) // Index gives one error per such name, in name order
	for i, name := range dup {
		if c.ambiguous == nil {
			c.ambiguous = map[string]error{}
		}
		c.ambiguous[name] = fmt.Errorf("%w: cluster %s is registered by more than one Secret", cluster.ErrInvalidRegistration, name)
		if i < len(errs) {
			c.ambiguous[name] = errs[i]
		}
	}
	if rule == nil {
		return c, nil
	}
	allowed, err := cluster.Select(unique, rule.Names, rule.Selector)
	if err != nil {
		return Clusters{}, err
	}
	c.allowed = allowed
	meant, err := cluster.Select(regs, rule.Names, rule.Selector) // the ambiguous names too
	if err != nil {
		return Clusters{}, err
	}
	c.meant = make(map[string]bool, len(meant))
	for _, reg := range meant {
		c.meant[reg.Name] = true
	}
	return c, nil
}

// Names are the names of the clusters the set may use, sorted.
func (c Clusters) Names() []string {
	out := make([]string, len(c.allowed))
	for i, reg := range c.allowed {
		out[i] = reg.Name
	}
	return out
}

// Template is what templates see as .Clusters: one map per cluster the
// set may use, sorted by name, with the keys Name (the registered name,
// what loom.dev/cluster takes) and Labels (the registration's labels).
// It is a new value on every call, so a template that changes it changes
// only its own render's copy; it is never nil, so range and len work when
// the set may use no cluster.
func (c Clusters) Template() []any {
	out := make([]any, len(c.allowed))
	for i, reg := range c.allowed {
		labels := make(map[string]any, len(reg.Labels))
		for k, v := range reg.Labels {
			labels[k] = v
		}
		out[i] = map[string]any{"Name": reg.Name, "Labels": labels}
	}
	return out
}

// Check reports whether child may be placed where its loom.dev/cluster
// annotation says (object.AnnotationCluster): without the annotation, in
// the cluster Loom runs in, always; with it, in a registered cluster the
// set may use. A value that is not a non-empty string is an error too.
func (c Clusters) Check(child *unstructured.Unstructured) error {
	v, found, _ := unstructured.NestedFieldNoCopy(child.Object, "metadata", "annotations", object.AnnotationCluster)
	if !found {
		return nil
	}
	name, ok := v.(string)
	switch {
	case !ok:
		return fmt.Errorf("annotation %s: must be a cluster's name, not %T", object.AnnotationCluster, v)
	case name == "":
		return fmt.Errorf("annotation %s is empty: name a registered cluster, or leave the annotation out for the cluster Loom runs in", object.AnnotationCluster)
	case !c.meant[name] && (c.rule == nil || !slices.Contains(c.rule.Names, name)):
		return fmt.Errorf("%w: %s %q: %s", ErrNotAllowed, object.AnnotationCluster, name, c.allows())
	case c.ambiguous[name] != nil:
		return fmt.Errorf("%w: %s %q: %w", ErrNotRegistered, object.AnnotationCluster, name, c.ambiguous[name])
	case !c.registered[name]:
		return fmt.Errorf("%w: %s %q: no Secret in Loom's namespace registers a cluster of that name", ErrNotRegistered, object.AnnotationCluster, name)
	case !slices.ContainsFunc(c.allowed, func(r cluster.Registration) bool { return r.Name == name }):
		return fmt.Errorf("%w: %s %q: %s", ErrNotAllowed, object.AnnotationCluster, name, c.allows())
	}
	return nil
}

// allows says which clusters the set may use, for an error.
func (c Clusters) allows() string {
	if c.rule == nil {
		return fmt.Sprintf("this set's %s has no clusters:, so its children may go only to the cluster Loom runs in", config.File)
	}
	if len(c.allowed) == 0 {
		return fmt.Sprintf("no registered cluster is one this set's %s clusters: allows", config.File)
	}
	return fmt.Sprintf("this set's %s clusters: allows only %s", config.File, strings.Join(c.Names(), ", "))
}
