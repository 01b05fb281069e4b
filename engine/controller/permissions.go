package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/rbac"
)

// Intervals of the permission check: while a permission is missing Loom
// asks again soon, so that a grant heals without a restart.
const (
	permissionsRecheck = 15 * time.Second
	permissionsRefresh = 10 * time.Minute
)

// permissions is what Loom found it may not do, of what its running sets
// need (rbac.Generate): asked of the API server with
// SelfSubjectAccessReviews, which every authenticated user may create.
type permissions struct {
	reviews authclient.SelfSubjectAccessReviewInterface
	kick    chan struct{} // a reload changed the sets

	mu      sync.Mutex
	missing []string // rbac.Check.String of each, in order
}

// wake asks for a check now.
func (p *permissions) wake() {
	if p == nil {
		return
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// err is the readiness error for the missing permissions, or nil.
func (p *permissions) err() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.missing) == 0 {
		return nil
	}
	return fmt.Errorf("Loom lacks RBAC permissions its template sets need (`loom rbac` prints them all): %s", strings.Join(p.missing, "; "))
}

// watchPermissions checks Loom's permissions at start, after each reload,
// and then every permissionsRecheck while one is missing, else every
// permissionsRefresh. A failed review keeps the last answer.
func (m *Manager) watchPermissions(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		wait := permissionsRefresh
		missing, err := m.missingPermissions(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			logger.Error(err, "Could not check Loom's RBAC permissions; trying again")
			wait = permissionsRecheck
		default:
			p := m.perms
			p.mu.Lock()
			changed := !slices.Equal(p.missing, missing)
			p.missing = missing
			p.mu.Unlock()
			m.metrics.missingPermissions.Set(float64(len(missing)))
			if len(missing) > 0 {
				wait = permissionsRecheck
			}
			if changed && len(missing) > 0 {
				logger.Error(nil, "Loom lacks RBAC permissions its template sets need; `loom rbac` prints them all", "missing", missing)
			} else if changed {
				logger.Info("Loom holds every RBAC permission its template sets need")
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.perms.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// missingPermissions asks about each permission the running sets need.
func (m *Manager) missingPermissions(ctx context.Context) ([]string, error) {
	m.mu.Lock()
	var sets []rbac.Set
	for _, gk := range sortedKinds(m.controllers) {
		s := m.controllers[gk].set.Load()
		rs, err := rbac.FromSet(s)
		if err != nil {
			// A kind computed by a template: the check cannot know
			// it; the rest is checked.
			rs = rbac.Set{Name: s.Name, Config: s.Config, Seeded: s.Seeded()}
		}
		sets = append(sets, rs)
	}
	m.mu.Unlock()
	policy := rbac.Generate(sets, rbac.Options{Namespace: m.opts.Namespace, InstallCRDs: m.opts.InstallCRDs})
	var missing []string
	for _, c := range policy.Checks() {
		cctx, cancel := context.WithTimeout(ctx, m.opts.ReconcileTimeout)
		review, err := m.perms.reviews.Create(cctx, &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authv1.ResourceAttributes{Namespace: c.Namespace, Verb: c.Verb, Group: c.Group, Resource: c.Resource, Subresource: c.Subresource, Name: c.Name},
		}}, metav1.CreateOptions{})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("review %s: %w", c, err)
		}
		if !review.Status.Allowed {
			missing = append(missing, c.String())
		}
	}
	return missing, nil
}
