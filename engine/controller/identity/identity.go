package identity

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/dynamic"
	authclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/loom-operator/loom/engine/apply"
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

// ServiceAccountsGVR is the ServiceAccounts' resource.
var ServiceAccountsGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}

// Source is what the parent controller asks of the sets' identities: the
// Account a reconcile acts as for a ServiceAccount, and whether that
// account may make a lookup that Loom answers from its own caches.
// *Accounts is the Source Loom runs with.
type Source interface {
	// Of returns the Account of the ServiceAccount sa.
	Of(sa types.NamespacedName) (*Account, error)
	// Authorize returns nil when id may verb the resource gvr (the
	// object named name, or, for "", the namespace's), else why not.
	Authorize(ctx context.Context, id *Account, verb string, gvr schema.GroupVersionResource, namespace, name string) error
}

// Account is a set's ServiceAccount in one namespace, as Loom acts as it
// (loom.yaml's serviceAccountName): its applier sends every request as
// that account, by impersonation, over Loom's own connections.
type Account struct {
	sa      types.NamespacedName
	user    string
	groups  []string
	applier *apply.Applier
}

// Applier is the applier that acts as the account.
func (id *Account) Applier() *apply.Applier { return id.applier }

// ServiceAccount is the account's ServiceAccount: in a workload cluster,
// the account of the same namespace and name there is impersonated.
func (id *Account) ServiceAccount() types.NamespacedName { return id.sa }

// Accounts makes and keeps one Account per ServiceAccount, and the
// answers of the SubjectAccessReviews that authorize its lookups. Caches
// are not multiplied: lookups are answered from Loom's shared informers,
// once the account may read what is looked up.
type Accounts struct {
	cfg     *rest.Config
	rt      http.RoundTripper // Loom's transport, shared by every identity
	timeout time.Duration
	applier *apply.Applier
	reviews authclient.SubjectAccessReviewInterface

	mu        sync.Mutex
	byName    map[types.NamespacedName]*Account
	decisions map[decisionKey]decision
}

// NewAccounts returns the Accounts that impersonate over rt, Loom's own
// transport, with cfg (Loom's config) and the client timeout; each
// account's applier is applier acting as the account, and reviews
// answers whether an account may make a lookup.
func NewAccounts(cfg *rest.Config, rt http.RoundTripper, timeout time.Duration, applier *apply.Applier, reviews authclient.SubjectAccessReviewInterface) *Accounts {
	return &Accounts{cfg: cfg, rt: rt, timeout: timeout, applier: applier, reviews: reviews,
		byName: map[types.NamespacedName]*Account{}, decisions: map[decisionKey]decision{}}
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

// Of returns the Account of the ServiceAccount sa.
func (ids *Accounts) Of(sa types.NamespacedName) (*Account, error) {
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
	id := &Account{sa: sa, user: user, groups: append(serviceaccount.MakeGroupNames(sa.Namespace), "system:authenticated"),
		applier: ids.applier.As(client)}
	ids.byName[sa] = id
	return id, nil
}

// Authorize asks whether id may verb the resource gvr (an object named
// name, or, for "", the namespace's), with a SubjectAccessReview whose
// answer is kept for a while. A denial is an error naming the account and
// the permission.
func (ids *Accounts) Authorize(ctx context.Context, id *Account, verb string, gvr schema.GroupVersionResource, namespace, name string) error {
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

// accountKey carries a reconcile's Account in its context.
type accountKey struct{}

// WithAccount returns ctx carrying id (nil: Loom's own).
func WithAccount(ctx context.Context, id *Account) context.Context {
	if id == nil {
		return ctx
	}
	return context.WithValue(ctx, accountKey{}, id)
}

// FromContext returns the Account that ctx carries, or nil for Loom's
// own.
func FromContext(ctx context.Context) *Account {
	id, _ := ctx.Value(accountKey{}).(*Account)
	return id
}
