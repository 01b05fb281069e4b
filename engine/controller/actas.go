package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/controller/reader"
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

// runningSets are the sets of the running controllers, in kind order, for
// the permission watch (identity.Permissions).
func (m *Manager) runningSets() []*render.Set {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sets []*render.Set
	for _, gk := range sortedKinds(m.controllers) {
		sets = append(sets, m.controllers[gk].Set())
	}
	return sets
}
