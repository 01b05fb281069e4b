package rbac

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/rbac/roles"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/render/kinds"
	"github.com/loom-operator/loom/engine/render/modes"
)

// Set is what one template set makes Loom do to the cluster.
type Set struct {
	// Name names the set in errors.
	Name string
	// Config is the set's loom.yaml.
	Config config.Config
	// Children are the kinds its templates render (see ScanKinds).
	Children []Kind
	// Orphans is true when a template sets loom.dev/delete-policy:
	// Loom then reads Namespaces and writes the parent's finalizers.
	Orphans bool
	// Seeded is true for a chart that calls a random or generating
	// function: Loom keeps a seed Secret per parent (get and create in the
	// parent's namespace, patch to keep generated keys and certificates in
	// it, and delete to migrate a Secret of the name it had before).
	Seeded bool
	// Roles are the roles its templates write and the roleRefs of its
	// bindings (see roles.Scan).
	Roles roles.Found
	// Observed are the kinds of Children that only observed children
	// (loom.dev/manage: observe, literally) are of: Loom reads them, and
	// patches one only to release it (a child switched to observe), but
	// never creates or deletes one.
	Observed map[schema.GroupKind]bool
	// Patched are the kinds of Children some patch child
	// (loom.dev/manage: patch, literally) is of: Loom patches them
	// wherever their lookup declaration may read.
	Patched map[schema.GroupKind]bool
}

// FromSet reduces a loaded set to what its permissions depend on.
func FromSet(s *render.Set) (Set, error) {
	texts := s.ChildTexts()
	children, err := kinds.ScanKinds(texts)
	if err != nil {
		return Set{}, fmt.Errorf("set %s: %w", s.Name, err)
	}
	out := Set{Name: s.Name, Config: s.Config, Children: children, Seeded: s.Seeded(), Roles: s.Roles(),
		Observed: observedOnly(kinds.Occurrences(texts), notOwned(modes.ObservedDocs(texts, s.Config.Manage), modes.PatchedDocs(texts, s.Config.Manage))),
		Patched:  patchedKinds(kinds.Occurrences(texts), modes.PatchedDocs(texts, s.Config.Manage))}
	if err := out.checkRoleRefs(); err != nil {
		return Set{}, fmt.Errorf("set %s: %w", s.Name, err)
	}
	for _, b := range texts {
		if strings.Contains(string(b), object.AnnotationDeletePolicy) {
			out.Orphans = true
		}
	}
	return out, nil
}

// Options are the flags of `loom run` that change what it needs.
type Options struct {
	// Namespace is --namespace: Loom watches only it. Empty means every
	// namespace, and every namespaced permission is cluster-wide.
	Namespace string
	// InstallCRDs is --install-crds.
	InstallCRDs bool
	// LeaseNamespace, when set, is --leader-election-namespace of a Loom
	// run with --leader-elect.
	LeaseNamespace string
	// ShardNamespace, when set, is --shard-namespace of a Loom run with
	// --sharded: its members' Leases and the group's table.
	ShardNamespace string
	// LoomNamespace is --loom-namespace: its Secrets register workload
	// clusters, and one holds the conversion webhook's certificates. ""
	// is loom-system, the flag's default out of a pod.
	LoomNamespace string
	// WebhookCertSecret is --webhook-cert-secret, the Secret of the
	// conversion webhook's certificates ("": loom-webhook-tls).
	WebhookCertSecret string
	// WebhookFiles is --webhook-cert-dir: Loom serves another's
	// certificate (cert-manager's), and keeps no Secret of its own.
	WebhookFiles bool
	// NoWebhook is --webhook-bind-address=0: no conversion webhook, so
	// neither its Secret nor the CRDs' caBundle.
	NoWebhook bool
}

// defaultWebhookCertSecret is Options.WebhookCertSecret's default
// (certs.DefaultSecret, which rbac must not import).
const defaultWebhookCertSecret = "loom-webhook-tls"

// defaultLoomNamespace is Options.LoomNamespace's default, loom run's
// --loom-namespace out of a pod (offline.DefaultLoomNamespace, which rbac
// must not import).
const defaultLoomNamespace = "loom-system"

// Verbs Loom uses, in the order RBAC documents them.
var (
	readVerbs  = []string{"get", "list", "watch"}
	childVerbs = []string{"get", "list", "watch", "create", "patch", "delete"}
	// observeVerbs are those of a kind only observed: patch releases a
	// child switched to observe from full or create-only.
	observeVerbs = []string{"get", "list", "watch", "patch"}
	verbOrder    = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "impersonate"}
)

// Policy is the rules Loom needs: Cluster for a ClusterRole, and
// Namespaces for a Role in each namespace.
type Policy struct {
	Cluster    []rbacv1.PolicyRule
	Namespaces map[string][]rbacv1.PolicyRule
}

// scopeKey is one resource in one namespace ("" for cluster-wide), or
// one object of it when name is set.
type scopeKey struct {
	namespace string
	gr        schema.GroupResource
	name      string
	url       string // a non-resource URL, for a rule of no resource
}

// needs collects the verbs per resource and namespace.
type needs map[scopeKey]map[string]bool

func (n needs) add(namespace string, gr schema.GroupResource, verbs ...string) {
	n.addNamed(namespace, gr, "", verbs...)
}

// addNamed adds verbs on one object of gr (all of them for "").
func (n needs) addNamed(namespace string, gr schema.GroupResource, name string, verbs ...string) {
	k := scopeKey{namespace: namespace, gr: gr, name: name}
	if n[k] == nil {
		n[k] = map[string]bool{}
	}
	for _, v := range verbs {
		n[k][v] = true
	}
}

// Generate returns the least-privilege rules with which a Loom run with o
// reconciles sets. Each rule has a reason in docs/how-to/rbac-and-identity.md; a test removes each in turn.
func Generate(sets []Set, o Options) Policy {
	n := needs{}
	// ns is where a namespaced permission is needed: the watched
	// namespace, or cluster-wide.
	ns := o.Namespace
	// CRDs: discovery refresh and readiness watch them; --install-crds
	// creates and applies the sets' own and charts' crds/.
	crds := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	n.add("", crds, readVerbs...)
	if o.InstallCRDs {
		n.add("", crds, "create", "patch")
	}
	events := schema.GroupResource{Resource: "events"}
	n.add(ns, events, "create", "patch")
	if ns != "" {
		// Events about cluster-scoped objects (a set's CRD) go to default.
		n.add("default", events, "create", "patch")
	}
	if o.LeaseNamespace != "" {
		n.add(o.LeaseNamespace, schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "get", "create", "update")
	}
	if o.ShardNamespace != "" {
		// Each replica creates, renews and (leaving) deletes its own
		// Lease, watches the others', fences an expired one (delete) and
		// updates the table.
		n.add(o.ShardNamespace, schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"},
			"get", "list", "watch", "create", "update", "delete")
	}
	loomNS := o.LoomNamespace
	if loomNS == "" {
		loomNS = defaultLoomNamespace
	}
	secrets := schema.GroupResource{Resource: "secrets"}
	for _, s := range sets {
		s.add(n, ns, o.InstallCRDs)
		if s.Config.Clusters != nil {
			// The registry of workload clusters watches the Secrets that
			// register them, in Loom's namespace only.
			n.add(loomNS, secrets, readVerbs...)
		}
		if len(s.Config.Versions) > 0 && !o.NoWebhook {
			// The conversion webhook: its certificates' Secret (create
			// cannot be limited to a name), and the caBundle injected into
			// the set's CRD (with cert-manager, the cainjector's
			// annotation).
			name := o.WebhookCertSecret
			if name == "" {
				name = defaultWebhookCertSecret
			}
			if !o.WebhookFiles {
				n.add(loomNS, secrets, "create")
				n.addNamed(loomNS, secrets, name, "get", "update")
			}
			n.addNamed("", crds, s.crdName(), "patch")
		}
	}
	return n.policy()
}

// crdName is the name of the set's CRD: plural.group.
func (s Set) crdName() string {
	parent := s.Config.ParentGVK()
	plural := s.Config.Parent.Plural
	if plural == "" {
		plural = crd.Plural(parent.Kind)
	}
	return plural + "." + parent.Group
}

// add adds what one set needs; ns is the watched namespace or "".
func (s Set) add(n needs, ns string, installCRDs bool) {
	parent := s.Config.ParentGVK()
	pres := s.Config.Parent.Plural
	if pres == "" {
		pres = crd.Plural(parent.Kind)
	}
	clusterScoped := s.Config.ClusterScopedKinds()
	parentNS := ns
	if s.Config.Parent.Scope == "Cluster" {
		parentNS = ""
	}
	gr := func(res string) schema.GroupResource { return schema.GroupResource{Group: parent.Group, Resource: res} }
	n.add(parentNS, gr(pres), readVerbs...)
	if installCRDs && parentNS != "" {
		// Before a schema change, --install-crds reads the stored parents
		// of every namespace.
		n.add("", gr(pres), "list")
	}
	if installCRDs && len(s.Config.Versions) > 0 {
		// The storage migration (engine/controller/migrate) rewrites every
		// stored parent, or has the API server's StorageVersionMigration
		// do it, then shrinks the CRD's status.storedVersions.
		n.add("", gr(pres), "list", "update")
		n.add("", schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions/status"}, "patch")
		n.add("", schema.GroupResource{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations"}, "get", "create")
	}
	// A status write is a server-side apply of the status subresource.
	n.add(parentNS, gr(pres+"/status"), "patch")
	// blockOwnerDeletion on every child's ownerReference: under the
	// OwnerReferencesPermissionEnforcement admission plugin.
	n.add(parentNS, gr(pres+"/finalizers"), "update")
	if s.Orphans || len(clusterScoped) > 0 || s.Seeded || s.Config.Clusters != nil || len(s.Patched) > 0 {
		// The loom.dev/orphan, loom.dev/cluster-children,
		// loom.dev/remote-children and loom.dev/patches finalizers; a
		// seeded chart's loom.dev/seed annotation.
		n.add(parentNS, gr(pres), "patch")
	}
	if s.Orphans {
		n.add("", schema.GroupResource{Resource: "namespaces"}, "get")
	}
	if s.Seeded {
		n.add(parentNS, schema.GroupResource{Resource: "secrets"}, "get", "create", "patch", "delete")
	}
	// With a ServiceAccount, the account writes the children and Loom
	// only watches them; it impersonates the account, checks that it
	// exists, and asks the API server what it may look up.
	verbs := childVerbs
	if sa := s.Config.ServiceAccountName; sa != "" {
		verbs = readVerbs
		accounts := schema.GroupResource{Resource: "serviceaccounts"}
		n.addNamed(parentNS, accounts, sa, "impersonate")
		n.add(parentNS, accounts, "list", "watch")
		if len(s.Config.Lookups) > 0 {
			n.add("", schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, "create")
		}
	}
	for _, k := range s.Children {
		where := ns
		if clusterScoped[k.GroupKind] || builtinClusterScoped(k.GroupKind) {
			where = ""
		}
		if s.Observed[k.GroupKind] {
			n.add(where, Resource(k.GroupKind), observeVerbs...)
			continue
		}
		n.add(where, Resource(k.GroupKind), verbs...)
	}
	if s.Config.ServiceAccountName == "" {
		s.grantsRBAC(n, ns, clusterScoped)
	}
	for _, l := range s.Config.Lookups {
		gk := config.KindRef{APIVersion: l.APIVersion, Kind: l.Kind}.GroupKind()
		res := Resource(gk)
		verbs := readVerbs
		if s.Patched[gk] {
			verbs = observeVerbs // get, list, watch and patch
		}
		if ns == "" || clusterScoped[gk] || builtinClusterScoped(gk) {
			n.add("", res, verbs...)
			continue
		}
		n.add(ns, res, verbs...)
		for _, other := range l.Namespaces {
			n.add(other, res, verbs...)
		}
	}
	if s.Config.Rollout != nil {
		n.add("", v1alpha1.TemplateSetGVR.GroupResource(), "get", "list", "watch", "create")
		n.add("", schema.GroupResource{Group: v1alpha1.Group, Resource: v1alpha1.TemplateSetStatusResource}, "update")
		n.add("", v1alpha1.TemplateRevisionGVR.GroupResource(), "get", "list", "create", "delete")
	}
}

// builtinClusterScoped reports whether gk is a cluster-scoped kind built
// into Kubernetes.
func builtinClusterScoped(gk schema.GroupKind) bool {
	return render.IsClusterScoped(schema.GroupVersion{Group: gk.Group, Version: "v1"}.String(), gk.Kind)
}

// irregular are built-in kinds whose resource is not Plural(kind).
var irregular = map[string]string{"Endpoints": "endpoints"}

// Resource returns the resource of a kind: its name in URLs and RBAC.
// Offline this is a guess that holds for every built-in kind (a test
// compares it with the local API server's discovery) and for CRDs that
// keep the default plural.
func Resource(gk schema.GroupKind) schema.GroupResource {
	if r, ok := irregular[gk.Kind]; ok && gk.Group == "" {
		return schema.GroupResource{Resource: r}
	}
	return schema.GroupResource{Group: gk.Group, Resource: crd.Plural(gk.Kind)}
}

// policy merges the needs into rules: per namespace, one rule per group
// and set of verbs, with the resources sorted.
func (n needs) policy() Policy {
	type ruleKey struct {
		namespace, group, verbs, name string
		url                           bool // resources are non-resource URLs
	}
	resources := map[ruleKey][]string{}
	for k, verbs := range n {
		rk := ruleKey{namespace: k.namespace, group: k.gr.Group, verbs: strings.Join(sortVerbs(verbs), ","), name: k.name}
		if k.url != "" {
			rk = ruleKey{verbs: rk.verbs, url: true}
			resources[rk] = append(resources[rk], k.url)
			continue
		}
		resources[rk] = append(resources[rk], k.gr.Resource)
	}
	keys := make([]ruleKey, 0, len(resources))
	for k := range resources {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.url != b.url {
			return b.url
		}
		if a.group != b.group {
			return a.group < b.group
		}
		ra, rb := slices.Min(resources[a]), slices.Min(resources[b])
		if ra != rb {
			return ra < rb
		}
		if a.verbs != b.verbs {
			return a.verbs < b.verbs
		}
		return a.name < b.name
	})
	p := Policy{Namespaces: map[string][]rbacv1.PolicyRule{}}
	for _, k := range keys {
		res := resources[k]
		sort.Strings(res)
		rule := rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: res, Verbs: strings.Split(k.verbs, ",")}
		if k.url {
			rule = rbacv1.PolicyRule{NonResourceURLs: res, Verbs: rule.Verbs}
		}
		if k.name != "" {
			rule.ResourceNames = []string{k.name}
		}
		if k.namespace == "" {
			p.Cluster = append(p.Cluster, rule)
		} else {
			p.Namespaces[k.namespace] = append(p.Namespaces[k.namespace], rule)
		}
	}
	return p
}

// observedOnly returns the kinds whose every template document (each
// occurrence, by the line that names its kind) is in an observed range.
func observedOnly(children []Kind, observed map[string][][2]int) map[schema.GroupKind]bool {
	seen, full := map[schema.GroupKind]bool{}, map[schema.GroupKind]bool{}
	for _, k := range children {
		in := slices.ContainsFunc(observed[k.File], func(r [2]int) bool { return k.Line >= r[0] && k.Line <= r[1] })
		if in {
			seen[k.GroupKind] = true
		} else {
			full[k.GroupKind] = true
		}
	}
	for gk := range full {
		delete(seen, gk)
	}
	return seen
}
