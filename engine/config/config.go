package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// File is the name of the file that makes a folder a template set.
const File = "loom.yaml"

// Parse decodes loom.yaml strictly (an unknown field is an error, an
// *UnknownFieldError with its path, line and the nearest known key) and
// validates it.
func Parse(raw []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		if u := unknownField(raw); u != nil {
			return Config{}, u
		}
		return Config{}, fmt.Errorf("invalid set config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ParentGVK is the parent's kind, as loom.yaml names it. It is valid only
// for a Config that Validate accepts.
func (c *Config) ParentGVK() schema.GroupVersionKind {
	gv, _ := schema.ParseGroupVersion(c.Parent.APIVersion)
	return gv.WithKind(c.Parent.Kind)
}

// Config is the content of a set's loom.yaml.
type Config struct {
	// Parent names the kind whose objects this set renders children for.
	Parent ParentRef `json:"parent"`
	// Readiness overrides how the status stage judges a child's readiness.
	Readiness []ReadinessRule `json:"readiness,omitempty"`
	// Status names a template file, inside the set, that renders extra
	// fields for the parent's status. It is not rendered as children.
	Status string `json:"status,omitempty"`
	// Lookups declare the kinds templates may look up besides the
	// parent's own children, and the namespaces they may read besides the
	// parent's.
	Lookups []LookupRule `json:"lookups,omitempty"`
	// SpecLookups, when true, lets template text that comes from a
	// parent's spec call lookup: text that tpl runs (a chart's
	// common.tplvalues.render, a set's tpl of .Spec) and that is not the
	// set's or the chart's own. Without it such a lookup, or one in a
	// define that text includes, fails the render: whoever may write a
	// parent could otherwise read, with Loom's identity, whatever the
	// set's lookups declare.
	SpecLookups bool `json:"specLookups,omitempty"`
	// ClusterScoped declares the cluster-scoped kinds a namespaced
	// parent's templates may render (ClusterRole, ClusterRoleBinding,
	// webhook configurations, ...). No ownerReference can reach such a
	// child from a namespaced parent: Loom marks it with the parent's
	// ApplySet label and loom.dev/owner, and deletes it itself when the
	// parent is deleted (finalizer loom.dev/cluster-children). Whoever may
	// create a parent may make Loom create these objects.
	ClusterScoped []KindRef `json:"clusterScoped,omitempty"`
	// BindRoles lists the roles that the set's RoleBindings and
	// ClusterRoleBindings may refer to from a roleRef that a template
	// computes (see BindRole). Loom may bind these and the roles the
	// templates name literally, and no others.
	BindRoles []BindRole `json:"bindRoles,omitempty"`
	// Rollout, when set, moves a new revision of the set to its parents
	// in health-gated steps instead of all at once.
	Rollout *Policy `json:"rollout,omitempty"`
	// Chart, when set, is a Helm chart (a folder or a .tgz, relative to
	// loom.yaml and inside the set's folder) that renders the children in
	// place of the set's own templates: the parent's spec is its values.
	Chart string `json:"chart,omitempty"`
	// Notes, for a chart set, writes the chart's rendered NOTES.txt (the
	// root chart's) into each parent's status.notes. Off by default: some
	// charts print generated passwords there, and whoever may read a
	// parent may read its status.
	Notes bool `json:"notes,omitempty"`
	// ServiceAccountName, when set, names a ServiceAccount of each
	// parent's namespace that Loom acts as for that parent's children:
	// it applies, prunes and releases them, and answers the templates'
	// lookups, with that account's permissions and no more of its own.
	// The parent kind must be namespaced.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// Schema, when set, is the parent's API: Loom generates the parent's
	// CRD from it, defaults and validates specs offline and checks what
	// the templates read against it. Without it the spec is free-form.
	Schema *Schema `json:"schema,omitempty"`
	// Versions are the versions of the parent's API served besides the
	// hub (parent.apiVersion's, whose schema is Schema), each with its
	// own schema and its conversion to and from the hub. Loom serves the
	// conversion webhook for them.
	Versions []Version `json:"versions,omitempty"`
	// StorageVersion is the version the API server stores parents in: the
	// hub's unless it names one of Versions. Changing it makes Loom
	// migrate every stored parent.
	StorageVersion string `json:"storageVersion,omitempty"`
	// Clusters, when set, names the registered workload clusters the
	// set's children may be placed in (see Clusters). Without it every
	// child goes to the cluster Loom runs in.
	Clusters *Clusters `json:"clusters,omitempty"`
	// Manage is how much of each child Loom manages unless the child's
	// loom.dev/manage annotation says otherwise: full (the default),
	// create-only, observe or patch (see object.AnnotationManage).
	Manage string `json:"manage,omitempty"`
	// Drift is what Loom does, by default, when another writer changed a
	// field a template sets.
	Drift *Drift `json:"drift,omitempty"`
	// Suspend, when true, suspends every parent of the set: Loom writes
	// none of their children and only reads them and writes the parents'
	// status, until it is removed (see object.AnnotationSuspend).
	Suspend bool `json:"suspend,omitempty"`
}

// ParentRef names the parent kind.
type ParentRef struct {
	// APIVersion is group/version, e.g. example.loom.dev/v1alpha1.
	APIVersion string `json:"apiVersion"`
	// Kind is the parent's kind, e.g. MyResource.
	Kind string `json:"kind"`
	// Plural is the kind's resource name in URLs; by default the kind in
	// lower case with an "s" (or "es" after s, x, z, ch, sh; "ies" after a
	// consonant and y).
	Plural string `json:"plural,omitempty"`
	// Singular is the kind's singular name; by default the kind in lower
	// case.
	Singular string `json:"singular,omitempty"`
	// ShortNames are kubectl's short names for the kind, e.g. [myr].
	ShortNames []string `json:"shortNames,omitempty"`
	// Categories group the kind for kubectl get, e.g. [loom] (Loom adds
	// "loom" to every generated CRD).
	Categories []string `json:"categories,omitempty"`
	// Scope is Namespaced (the default) or Cluster.
	Scope string `json:"scope,omitempty"`
	// PrinterColumns are kubectl get's columns besides Loom's own (Ready,
	// State, Age). A column's JSONPath must exist in the schema or in
	// Loom's status.
	PrinterColumns []apiextv1.CustomResourceColumnDefinition `json:"printerColumns,omitempty"`
}

// ReadinessRule overrides the readiness of the children it matches.
type ReadinessRule struct {
	// Kind matches the child's kind; required.
	Kind string `json:"kind"`
	// APIVersion, when set, matches the child's apiVersion.
	APIVersion string `json:"apiVersion,omitempty"`
	// Name, when set, matches the child's name exactly.
	Name string `json:"name,omitempty"`
	// Condition names a condition type that must be True for the child to
	// be ready (e.g. Complete for a Job, Available for a custom kind).
	Condition string `json:"condition,omitempty"`
	// FailedCondition names a condition type that, when True, marks the
	// child Failed (e.g. Failed for a Job).
	FailedCondition string `json:"failedCondition,omitempty"`
	// Ignore, when true, leaves the child out of the parent's readiness.
	Ignore bool `json:"ignore,omitempty"`
}

// LookupRule declares a kind that templates may look up besides the
// parent's own children (see Config.Lookups).
type LookupRule struct {
	// APIVersion is the kind's group/version, e.g. v1.
	APIVersion string `json:"apiVersion"`
	// Kind is the kind, e.g. ConfigMap.
	Kind string `json:"kind"`
	// Namespaces are readable besides the parent's own namespace. Lookups
	// in any other namespace are refused.
	Namespaces []string `json:"namespaces,omitempty"`
}

// LookupRuleFor returns the rule of rules that declares gk (whatever its
// version), or nil.
func LookupRuleFor(rules []LookupRule, gk schema.GroupKind) *LookupRule {
	for i := range rules {
		if (KindRef{APIVersion: rules[i].APIVersion, Kind: rules[i].Kind}).GroupKind() == gk {
			return &rules[i]
		}
	}
	return nil
}

// KindRef names a kind by apiVersion and kind.
type KindRef struct {
	// APIVersion is the kind's group/version, e.g.
	// rbac.authorization.k8s.io/v1.
	APIVersion string `json:"apiVersion"`
	// Kind is the kind, e.g. ClusterRole.
	Kind string `json:"kind"`
}

// GroupKind returns the kind's group and kind; the version does not
// matter (one object served at two versions is one object).
func (k KindRef) GroupKind() schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(k.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: k.Kind}
}

// ClusterScopedKinds returns the group-kinds ClusterScoped declares.
func (c *Config) ClusterScopedKinds() map[schema.GroupKind]bool {
	if len(c.ClusterScoped) == 0 {
		return nil
	}
	out := make(map[schema.GroupKind]bool, len(c.ClusterScoped))
	for _, k := range c.ClusterScoped {
		out[k.GroupKind()] = true
	}
	return out
}

// Validate reports the first thing wrong with c, naming the field.
func (c *Config) Validate() error {
	if c.Parent.APIVersion == "" || c.Parent.Kind == "" {
		return errors.New("parent.apiVersion and parent.kind are required")
	}
	if _, err := schema.ParseGroupVersion(c.Parent.APIVersion); err != nil {
		return fmt.Errorf("parent.apiVersion: %w", err)
	}
	if err := validateParent(c.Parent); err != nil {
		return err
	}
	if err := validateSchema(c.Schema); err != nil {
		return err
	}
	if err := validateVersions(c); err != nil {
		return err
	}
	if err := validateScale(c); err != nil {
		return err
	}
	if n := c.ServiceAccountName; n != "" {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return fmt.Errorf("serviceAccountName %q: %s", n, strings.Join(errs, "; "))
		}
		if c.Parent.Scope == "Cluster" {
			return fmt.Errorf("serviceAccountName %q: a cluster-scoped parent has no namespace to find the ServiceAccount in", n)
		}
	}
	if c.Notes && c.Chart == "" {
		return errors.New("notes: only a chart set has a NOTES.txt")
	}
	if c.Chart != "" && !filepath.IsLocal(c.Chart) {
		return fmt.Errorf("chart %q: must be a path inside the set's folder (a symlink to a chart elsewhere works)", c.Chart)
	}
	for i, r := range c.Readiness {
		if r.Kind == "" {
			return fmt.Errorf("readiness[%d].kind is required", i)
		}
		if !r.Ignore && r.Condition == "" {
			return fmt.Errorf("readiness[%d] needs condition or ignore", i)
		}
	}
	if err := validateLookups(c.Lookups); err != nil {
		return err
	}
	if err := validateClusterScoped(c.ClusterScoped); err != nil {
		return err
	}
	if err := validateBindRoles(c.BindRoles); err != nil {
		return err
	}
	if err := validateClusters(c.Clusters); err != nil {
		return err
	}
	if err := validateManagement(c); err != nil {
		return err
	}
	if c.Rollout != nil {
		if err := c.Rollout.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// validateClusterScoped checks loom.yaml's clusterScoped.
func validateClusterScoped(kinds []KindRef) error {
	seen := map[schema.GroupKind]bool{}
	for i, k := range kinds {
		if k.APIVersion == "" || k.Kind == "" {
			return fmt.Errorf("clusterScoped[%d]: apiVersion and kind are required", i)
		}
		if _, err := schema.ParseGroupVersion(k.APIVersion); err != nil {
			return fmt.Errorf("clusterScoped[%d].apiVersion: %w", i, err)
		}
		gk := k.GroupKind()
		if seen[gk] {
			return fmt.Errorf("clusterScoped[%d]: %s is declared twice", i, gk)
		}
		seen[gk] = true
	}
	return nil
}

// validateLookups checks loom.yaml's lookups.
func validateLookups(rules []LookupRule) error {
	for i, r := range rules {
		if r.APIVersion == "" || r.Kind == "" {
			return fmt.Errorf("lookups[%d]: apiVersion and kind are required", i)
		}
		if _, err := schema.ParseGroupVersion(r.APIVersion); err != nil {
			return fmt.Errorf("lookups[%d].apiVersion: %w", i, err)
		}
		for _, ns := range r.Namespaces {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return fmt.Errorf("lookups[%d].namespaces: %q: %s", i, ns, strings.Join(errs, "; "))
			}
		}
	}
	return nil
}
