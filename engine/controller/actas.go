package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/controller/reader"
	"github.com/loom-operator/loom/engine/rbac"
	"github.com/loom-operator/loom/engine/render"
)

// identityFor returns the identity a reconcile of parent acts as: nil for
// a set without serviceAccountName (Loom's own). The account must exist;
// reader watches it, so that creating it reconciles the parent again.
func (c *Controller) identityFor(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, lookups *reader.Reader) (*identity.Account, error) {
	name := set.Config.ServiceAccountName
	if name == "" {
		return nil, nil
	}
	sa := types.NamespacedName{Namespace: parent.GetNamespace(), Name: name}
	found, err := lookups.Exists(identity.ServiceAccountsGVR, sa.Namespace, sa.Name)
	if err != nil {
		return nil, fmt.Errorf("read ServiceAccount %s: %w", sa, err)
	}
	if !found {
		return nil, &identity.MissingServiceAccountError{ServiceAccount: sa}
	}
	return c.sh.Identities.Of(sa)
}

// identityFinalizing is the identity a deleted parent's children are
// released and deleted as; the account is not required to still exist
// (the API server answers for what it may do).
func (c *Controller) identityFinalizing(parent *unstructured.Unstructured) (*identity.Account, error) {
	name := c.set.Load().Config.ServiceAccountName
	if name == "" {
		return nil, nil
	}
	return c.sh.Identities.Of(types.NamespacedName{Namespace: parent.GetNamespace(), Name: name})
}

// applier is the applier of the reconcile that ctx belongs to: the set's
// ServiceAccount's, or Loom's own.
func (c *Controller) applier(ctx context.Context) *apply.Applier {
	if id := identity.FromContext(ctx); id != nil {
		return id.Applier()
	}
	return c.sh.Applier
}

// permissionChecks are the permissions the running sets need
// (rbac.Generate), for the permission watch (identity.Permissions).
func (m *Manager) permissionChecks() []rbac.Check {
	m.mu.Lock()
	var sets []rbac.Set
	for _, gk := range sortedKinds(m.controllers) {
		s := m.controllers[gk].Set()
		rs, err := rbac.FromSet(s)
		if err != nil {
			// A kind computed by a template: the check cannot know
			// it; the rest is checked.
			rs = rbac.Set{Name: s.Name, Config: s.Config, Seeded: s.Seeded()}
		}
		sets = append(sets, rs)
	}
	m.mu.Unlock()
	return rbac.Generate(sets, rbac.Options{Namespace: m.opts.Namespace, InstallCRDs: m.opts.InstallCRDs}).Checks()
}
