package controller

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/dynamic"
	authclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/render"
)

// How long a SubjectAccessReview's answer for a lookup is kept: as the
// API server's own webhook authorizer does, a grant longer than a denial,
// so that a permission granted heals a parent within seconds.
const (
	allowedTTL = time.Minute
	deniedTTL  = 5 * time.Second
	// maxDecisions bounds the kept answers; the map is cleared when full.
	maxDecisions = 50_000
	// maxIdentities bounds the kept clients, one per ServiceAccount.
	maxIdentities = 10_000
)

var serviceAccountsGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}

// identity is a set's ServiceAccount in one namespace, as Loom acts as it
// (loom.yaml's serviceAccountName): its applier sends every request as
// that account, by impersonation, over Loom's own connections.
type identity struct {
	sa      types.NamespacedName
	user    string
	groups  []string
	applier *apply.Applier
}

// identities makes and keeps one identity per ServiceAccount, and the
// answers of the SubjectAccessReviews that authorize its lookups. Caches
// are not multiplied: lookups are answered from Loom's shared informers,
// once the account may read what is looked up.
type identities struct {
	cfg     *rest.Config
	rt      http.RoundTripper // Loom's transport, shared by every identity
	timeout time.Duration
	applier *apply.Applier
	reviews authclient.SubjectAccessReviewInterface

	mu        sync.Mutex
	byName    map[types.NamespacedName]*identity
	decisions map[decisionKey]decision
}

// decisionKey is one question about one account.
type decisionKey struct {
	user                                     string
	verb, group, resource, namespace, object string
}

// decision is the answer, and when it expires.
type decision struct {
	allowed bool
	reason  string
	expires time.Time
}

// of returns the identity of the ServiceAccount sa.
func (ids *identities) of(sa types.NamespacedName) (*identity, error) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if id := ids.byName[sa]; id != nil {
		return id, nil
	}
	user := serviceaccount.MakeUsername(sa.Namespace, sa.Name)
	// An impersonation header set here wins over one Loom's own config
	// sets further down the chain: client-go's impersonator leaves a
	// request that already has one alone.
	hc := &http.Client{Transport: transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{UserName: user}, ids.rt), Timeout: ids.timeout}
	client, err := dynamic.NewForConfigAndClient(ids.cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("client for ServiceAccount %s: %w", sa, err)
	}
	if len(ids.byName) >= maxIdentities {
		clear(ids.byName)
	}
	id := &identity{sa: sa, user: user, groups: append(serviceaccount.MakeGroupNames(sa.Namespace), "system:authenticated"),
		applier: ids.applier.As(client)}
	ids.byName[sa] = id
	return id, nil
}

// authorize asks whether id may verb the resource gvr (an object named
// name, or, for "", the namespace's), with a SubjectAccessReview whose
// answer is kept for a while. A denial is an error naming the account and
// the permission.
func (ids *identities) authorize(ctx context.Context, id *identity, verb string, gvr schema.GroupVersionResource, namespace, name string) error {
	key := decisionKey{user: id.user, verb: verb, group: gvr.Group, resource: gvr.Resource, namespace: namespace, object: name}
	now := time.Now()
	ids.mu.Lock()
	d, ok := ids.decisions[key]
	ids.mu.Unlock()
	if !ok || now.After(d.expires) {
		review, err := ids.reviews.Create(ctx, &authv1.SubjectAccessReview{Spec: authv1.SubjectAccessReviewSpec{
			User: id.user, Groups: id.groups,
			ResourceAttributes: &authv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: gvr.Group, Resource: gvr.Resource, Name: name},
		}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("ask whether ServiceAccount %s may %s %s: %w", id.sa, verb, gvr.GroupResource(), err)
		}
		d = decision{allowed: review.Status.Allowed, reason: review.Status.Reason, expires: now.Add(deniedTTL)}
		if d.allowed {
			d.expires = now.Add(allowedTTL)
		}
		ids.mu.Lock()
		if len(ids.decisions) >= maxDecisions {
			clear(ids.decisions)
		}
		ids.decisions[key] = d
		ids.mu.Unlock()
	}
	if d.allowed {
		return nil
	}
	what := gvr.GroupResource().String()
	if name != "" {
		what += " " + name
	}
	where := "at the cluster scope"
	if namespace != "" {
		where = "in namespace " + namespace
	}
	return &ForbiddenLookupError{ServiceAccount: id.sa, Verb: verb, What: what, Where: where}
}

// ForbiddenLookupError is a lookup that the set's ServiceAccount may not
// make: Loom reads through its own caches, but only what the account
// could read itself.
type ForbiddenLookupError struct {
	ServiceAccount    types.NamespacedName
	Verb, What, Where string
}

func (e *ForbiddenLookupError) Error() string {
	return fmt.Sprintf("ServiceAccount %s may not %s %s %s (loom.yaml's serviceAccountName: Loom looks up only what it may)",
		e.ServiceAccount, e.Verb, e.What, e.Where)
}

// MissingServiceAccountError is a set's ServiceAccount that the parent's
// namespace does not have.
type MissingServiceAccountError struct{ ServiceAccount types.NamespacedName }

func (e *MissingServiceAccountError) Error() string {
	return fmt.Sprintf("ServiceAccount %s not found: loom.yaml's serviceAccountName names the account Loom acts as for this parent's children; create it and grant it what the children need",
		e.ServiceAccount)
}

// identityFor returns the identity a reconcile of parent acts as: nil for
// a set without serviceAccountName (Loom's own). The account must exist;
// reader watches it, so that creating it reconciles the parent again.
func (c *parentController) identityFor(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, reader *lookupReader) (*identity, error) {
	name := set.Config.ServiceAccountName
	if name == "" {
		return nil, nil
	}
	sa := types.NamespacedName{Namespace: parent.GetNamespace(), Name: name}
	found, err := reader.Exists(serviceAccountsGVR, sa.Namespace, sa.Name)
	if err != nil {
		return nil, fmt.Errorf("read ServiceAccount %s: %w", sa, err)
	}
	if !found {
		return nil, &MissingServiceAccountError{ServiceAccount: sa}
	}
	return c.m.idents.of(sa)
}

// identityFinalizing is the identity a deleted parent's children are
// released and deleted as; the account is not required to still exist
// (the API server answers for what it may do).
func (c *parentController) identityFinalizing(parent *unstructured.Unstructured) (*identity, error) {
	name := c.set.Load().Config.ServiceAccountName
	if name == "" {
		return nil, nil
	}
	return c.m.idents.of(types.NamespacedName{Namespace: parent.GetNamespace(), Name: name})
}

// identityKey carries a reconcile's identity in its context.
type identityKey struct{}

// withIdentity returns ctx carrying id (nil: Loom's own).
func withIdentity(ctx context.Context, id *identity) context.Context {
	if id == nil {
		return ctx
	}
	return context.WithValue(ctx, identityKey{}, id)
}

// applier is the applier of the reconcile that ctx belongs to: the set's
// ServiceAccount's, or Loom's own.
func (c *parentController) applier(ctx context.Context) *apply.Applier {
	if id, ok := ctx.Value(identityKey{}).(*identity); ok {
		return id.applier
	}
	return c.m.applier
}
