package identity

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
	"github.com/loom-operator/loom/engine/render"
)

// Intervals of the permission check: while a permission is missing Loom
// asks again soon, so that a grant heals without a restart.
const (
	permissionsRecheck = 15 * time.Second
	permissionsRefresh = 10 * time.Minute
)

// Permissions is what Loom found it may not do, of what its running sets
// need (rbac.Generate): asked of the API server with
// SelfSubjectAccessReviews, which every authenticated user may create.
type Permissions struct {
	reviews authclient.SelfSubjectAccessReviewInterface
	kick    chan struct{} // a reload changed the sets
	// timeout bounds each review.
	timeout time.Duration
	// namespace is the one namespace Loom watches (empty: all), and
	// installCRDs whether Loom installs the sets' CRDs: what rbac.Generate
	// needs besides the sets.
	namespace   string
	installCRDs bool
	// loomNamespace is Loom's namespace, whose Secrets register workload
	// clusters.
	loomNamespace string
	// webhook is how the conversion webhook is served.
	webhook Webhook

	mu      sync.Mutex
	missing []string // rbac.Check.String of each, in order
}

// NewPermissions returns the Permissions that ask reviews, each review
// bounded by timeout, of what the sets need when Loom watches namespace
// (empty: all), with installCRDs installs the sets' CRDs, and reads the
// registrations of workload clusters in loomNamespace.
func NewPermissions(reviews authclient.SelfSubjectAccessReviewInterface, timeout time.Duration, namespace string, installCRDs bool, loomNamespace string, webhook Webhook) *Permissions {
	return &Permissions{reviews: reviews, kick: make(chan struct{}, 1), timeout: timeout, namespace: namespace, installCRDs: installCRDs,
		loomNamespace: loomNamespace, webhook: webhook}
}

// Webhook is how loom run serves the conversion webhook of the sets of
// several versions, which changes the permissions they need.
type Webhook struct {
	// CertSecret is --webhook-cert-secret ("": its default).
	CertSecret string
	// Files is --webhook-cert-dir: cert-manager's certificate, no Secret
	// of Loom's.
	Files bool
	// Off is --webhook-bind-address=0: no webhook.
	Off bool
}

// Wake asks for a check now (a reload changed the sets).
func (p *Permissions) Wake() {
	if p == nil {
		return
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Err is the readiness error for the missing permissions, or nil.
func (p *Permissions) Err() error {
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

// Watch checks Loom's permissions at start, after each Wake, and then
// every permissionsRecheck while one is missing, else every
// permissionsRefresh, until ctx is done. sets returns the running sets at
// that moment, whose needs (permissionChecks) are checked; report is told
// how many are missing after each check that succeeded. A failed review
// keeps the last answer.
func (p *Permissions) Watch(ctx context.Context, sets func() []*render.Set, report func(missing int)) {
	logger := klog.FromContext(ctx)
	for {
		wait := permissionsRefresh
		missing, err := p.missingOf(ctx, p.permissionChecks(sets()))
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			logger.Error(err, "Could not check Loom's RBAC permissions; trying again")
			wait = permissionsRecheck
		default:
			p.mu.Lock()
			changed := !slices.Equal(p.missing, missing)
			p.missing = missing
			p.mu.Unlock()
			report(len(missing))
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
		case <-p.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// permissionChecks are the permissions the running sets need
// (rbac.Generate).
func (p *Permissions) permissionChecks(running []*render.Set) []rbac.Check {
	var sets []rbac.Set
	for _, s := range running {
		rs, err := rbac.FromSet(s)
		if err != nil {
			// A kind computed by a template: the check cannot know
			// it; the rest is checked.
			rs = rbac.Set{Name: s.Name, Config: s.Config, Seeded: s.Seeded()}
		}
		sets = append(sets, rs)
	}
	return rbac.Generate(sets, rbac.Options{Namespace: p.namespace, InstallCRDs: p.installCRDs, LoomNamespace: p.loomNamespace,
		WebhookCertSecret: p.webhook.CertSecret, WebhookFiles: p.webhook.Files, NoWebhook: p.webhook.Off}).Checks()
}

// missingOf asks about each permission of checks, and returns those Loom
// lacks.
func (p *Permissions) missingOf(ctx context.Context, checks []rbac.Check) ([]string, error) {
	var missing []string
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, p.timeout)
		review, err := p.reviews.Create(cctx, &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
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
