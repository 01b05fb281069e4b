package clusters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/controller/transport"
	"github.com/loom-operator/loom/engine/shard"
	"github.com/loom-operator/loom/internal/kubeclient"
)

// ErrNotRegistered means a child names a workload cluster that no Secret
// registers (any more): the render checked it against the registrations
// it was given, which have changed since.
var ErrNotRegistered = errors.New("cluster not registered")

// Options are what each workload cluster's clients and cache are built
// with: the same as those of the cluster Loom runs in.
type Options struct {
	// AllowExec lets a registration's kubeconfig run a credential plugin.
	AllowExec bool
	// Deadline bounds how long a response may take to begin
	// (transport.ResponseDeadline), so that a cluster that does not answer
	// holds a worker no longer; discovery's whole request gets half.
	Deadline time.Duration
	// FieldManager is the server-side apply field manager.
	FieldManager string
	// Namespace limits the child caches to one namespace; "" means all.
	Namespace string
	// Resync is the informers' resync period; 0 disables it.
	Resync time.Duration
	// Route receives each change to a child in a workload cluster, but
	// the echo of Loom's own apply there.
	Route func(childcache.OwnerEvent)
	// Synced is called when a child kind's informer syncs after a
	// reconcile gave up waiting for it.
	Synced func(schema.GroupResource)
	// Enqueue re-reconciles a parent (the lookup cache's; lookups stay in
	// the cluster Loom runs in).
	Enqueue func(childcache.ParentKey)
	// Reachable, if set, is told after each reconcile whether each
	// workload cluster it placed children in answered (Observe).
	Reachable func(cluster string, ok bool)
	// Backoff is how long a cluster that did not answer is taken as down
	// (Place fails at once, with its last error) before a reconcile tries
	// it again, so that a hung cluster holds no worker for a request's
	// deadline on every reconcile; 0 means 10s.
	Backoff time.Duration
	// Probe is how often each connected workload cluster is asked whether
	// it answers (GET /readyz, bounded by Probe too), so that a cluster
	// that stops answering, or answers again, is noticed while its
	// children's caches still hold them and no reconcile would send it a
	// request; 0 means 5s.
	Probe time.Duration
	// Now is the clock of Backoff; nil means time.Now.
	Now func() time.Time
	// Owner, on a sharded replica, refuses a write for a parent the
	// replica no longer owns (transport.ShardGuard), as in the local
	// cluster; nil: not sharded.
	Owner transport.Owner
	// ParentUID and Held, on a sharded replica, make each cluster's cache
	// list only the children of the buckets the replica holds
	// (childcache.Config's); Keep follows a change. nil: not sharded.
	ParentUID func(context.Context) types.UID
	Held      func() shard.Set
	// QPS and Burst are the client-side rate limit of every workload
	// cluster's clients: the one Loom chose for the cluster it runs in
	// (--kube-api-qps; a negative QPS means none, as under priority and
	// fairness). 0 leaves client-go's default, 5 a second.
	QPS   float32
	Burst int
}

// Fleet is the workload clusters children are placed in: for each, its
// clients, child cache and applier, made from its registration the first
// time a reconcile places a child there, made again when the
// registration's kubeconfig changes, and stopped when no parent uses the
// cluster any more (Use).
type Fleet struct {
	ctx      context.Context
	registry *Registry
	opts     Options

	mu      sync.Mutex
	remotes map[string]*remote
	// users are, per parent UID, the parent and the workload clusters it
	// places children in (Use).
	users map[types.UID]user
}

// NewFleet returns the fleet of the clusters registry registers; their
// informers stop when ctx is done.
func NewFleet(ctx context.Context, registry *Registry, opts Options) *Fleet {
	return &Fleet{ctx: ctx, registry: registry, opts: opts, remotes: map[string]*remote{}, users: map[types.UID]user{}}
}

// user is a parent that places children in workload clusters.
type user struct {
	key      childcache.ParentKey
	clusters []string
}

// remote is one workload cluster's clients, cache and applier.
type remote struct {
	kubeconfig string // the registration's, to tell when it changes
	client     dynamic.Interface
	cache      *childcache.Cache
	applier    *apply.Applier
	mapper     *restmapper.DeferredDiscoveryRESTMapper
	accounts   *identity.Accounts
	stop       context.CancelFunc
	// down, while Now is before until, is why the cluster is taken as
	// not answering (Fleet.mu).
	down  error
	until time.Time
	// unanswered is the error of the last probe if the cluster did not
	// answer it, nil if it did (Fleet.mu): while it is set, the cluster
	// is taken as down.
	unanswered error
	// placed is when a reconcile last placed children there (Fleet.mu):
	// a cluster no parent uses is stopped only a while after, so that a
	// reconcile that has not said yet that it uses it keeps it.
	placed time.Time
}

// DownError is Place's error for a cluster taken as down: it did not
// answer a reconcile a moment ago (Err), and is tried again after
// Options.Backoff.
type DownError struct {
	Cluster string
	Err     error
}

// Error names the cluster and its last error.
func (e *DownError) Error() string {
	return fmt.Sprintf("cluster %s did not answer a moment ago (tried again shortly): %v", e.Cluster, e.Err)
}

// Unwrap returns the cluster's last error.
func (e *DownError) Unwrap() error { return e.Err }

// now is the Fleet's clock.
func (f *Fleet) now() time.Time {
	if f.opts.Now != nil {
		return f.opts.Now()
	}
	return time.Now()
}

// markDown takes the cluster name as down for Options.Backoff, with err;
// a nil err takes it as up.
func (f *Fleet) markDown(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.remotes[name]
	if r == nil {
		return
	}
	r.down, r.until = err, time.Time{}
	if err != nil {
		backoff := f.opts.Backoff
		if backoff <= 0 {
			backoff = 10 * time.Second
		}
		r.until = f.now().Add(backoff)
	}
}

// Place returns the workload cluster name as a reconcile writes children
// there, acting as id (the set's ServiceAccount, of the same namespace and
// name there; nil for Loom's own identity).
func (f *Fleet) Place(name string, id *identity.Account) (Place, error) {
	r, err := f.remote(name)
	if err != nil {
		return Place{}, err
	}
	p := Place{Cluster: name, Cache: r.cache, Applier: r.applier, Mapper: r.mapper, Client: r.client}
	if id != nil {
		acct, err := r.accounts.Of(id.ServiceAccount())
		if err != nil {
			return Place{}, fmt.Errorf("cluster %s: %w", name, err)
		}
		p.Applier = acct.Applier()
	}
	return p, nil
}

// remote returns the clients of the cluster name, made when needed.
func (f *Fleet) remote(name string) (*remote, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: %s (no registry)", ErrNotRegistered, name)
	}
	reg, ok := f.registry.Get(name)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotRegistered, name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.remotes[name]; r != nil {
		if r.kubeconfig == string(reg.Kubeconfig) {
			if r.unanswered != nil {
				return nil, &DownError{Cluster: name, Err: r.unanswered}
			}
			if r.down != nil && f.now().Before(r.until) {
				return nil, &DownError{Cluster: name, Err: r.down}
			}
			r.placed = f.now()
			return r, nil
		}
		r.stop() // registered again with another kubeconfig
		delete(f.remotes, name)
	}
	r, err := f.connect(name, reg)
	if err != nil {
		return nil, err
	}
	r.placed = f.now()
	f.remotes[name] = r
	klog.FromContext(f.ctx).Info("Connected to a workload cluster", "cluster", name, "secret", reg.Secret.String())
	return r, nil
}

// Use records the workload clusters the parent uid, key, places children
// in now (none: it is gone), and stops the clients, informers and cache of
// each cluster no parent uses any more, once no reconcile has placed a
// child there for twice the response deadline.
func (f *Fleet) Use(uid types.UID, key childcache.ParentKey, clusters []string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var remote []string
	for _, cl := range clusters {
		if cl != "" {
			remote = append(remote, cl)
		}
	}
	if len(remote) == 0 {
		delete(f.users, uid)
	} else {
		f.users[uid] = user{key: key, clusters: remote}
	}
	used := map[string]bool{}
	for _, u := range f.users {
		for _, cl := range u.clusters {
			used[cl] = true
		}
	}
	for name, r := range f.remotes {
		if !used[name] && f.now().Sub(r.placed) > 2*f.opts.Deadline {
			r.stop()
			delete(f.remotes, name)
			klog.FromContext(f.ctx).Info("Disconnected from a workload cluster no parent uses", "cluster", name)
		}
	}
}

// restConfig is the client configuration of a registered cluster: its
// kubeconfig (cluster.RESTConfig, which refuses what Loom must not run),
// Loom's user agent and client-side rate limit, a response deadline on
// every request, and on a sharded replica the write guard, as for the
// cluster Loom runs in.
func (f *Fleet) restConfig(reg cluster.Registration) (*rest.Config, error) {
	cfg, err := cluster.RESTConfig(reg, cluster.Options{AllowExec: f.opts.AllowExec})
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "loom"
	if f.opts.QPS != 0 {
		cfg.QPS, cfg.Burst = f.opts.QPS, f.opts.Burst
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &transport.ResponseDeadline{Next: rt, D: f.opts.Deadline}
	})
	if f.opts.Owner != nil {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return &transport.ShardGuard{Next: rt, Owner: f.opts.Owner}
		})
	}
	return cfg, nil
}

// connect makes a cluster's clients from its registration: a response
// deadline on every request, as for the cluster Loom runs in, its own
// child cache and applier, and its own impersonated accounts, and starts
// its probe (Fleet.probe). It contacts no server now: the informers start
// when a kind is first ensured, the probe after Options.Probe.
func (f *Fleet) connect(name string, reg cluster.Registration) (*remote, error) {
	cfg, err := f.restConfig(reg)
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error) (*remote, error) {
		return nil, fmt.Errorf("cluster %s: create %s: %w", reg.Name, what, err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fail("HTTP client", err)
	}
	client, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return fail("dynamic client", err)
	}
	children, err := packwatch.NewClient(cfg, hc, packwatch.Child(f.opts.FieldManager))
	if err != nil {
		return fail("child client", err)
	}
	mc, err := metadata.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return fail("metadata client", err)
	}
	dcfg := rest.CopyConfig(cfg)
	dcfg.Timeout = f.opts.Deadline / 2
	disco, err := discovery.NewDiscoveryClientForConfig(dcfg)
	if err != nil {
		return fail("discovery client", err)
	}
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return fail("clientset", err)
	}
	ctx, stop := context.WithCancel(f.ctx)
	r := &remote{kubeconfig: string(reg.Kubeconfig), stop: stop, client: client,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}
	r.applier = apply.New(client, r.mapper, f.opts.FieldManager, apply.WithOpenAPI(disco.OpenAPIV3()))
	r.accounts = identity.NewAccounts(cfg, hc.Transport, hc.Timeout, r.applier, kube.AuthorizationV1().SubjectAccessReviews())
	r.cache = childcache.New(ctx, childcache.Config{
		Children: children, Dynamic: client, Metadata: mc, Mapper: r.mapper,
		Namespace: f.opts.Namespace, Resync: f.opts.Resync, Synced: f.opts.Synced, Enqueue: f.opts.Enqueue,
		Route: r.route(f.opts.Route), ParentUID: f.opts.ParentUID, Held: f.opts.Held,
	})
	go f.probe(ctx, name, r, disco.RESTClient())
	return r, nil
}

// Keep makes each workload cluster's cache list the children of held's
// buckets only (childcache.Cache.Keep), and forgets what its applier
// recorded of the children of the buckets let go.
func (f *Fleet) Keep(held shard.Set) {
	if f == nil {
		return
	}
	f.mu.Lock()
	remotes := make([]*remote, 0, len(f.remotes))
	for _, r := range f.remotes {
		remotes = append(remotes, r)
	}
	f.mu.Unlock()
	for _, r := range remotes {
		for _, ref := range r.cache.Keep(held) {
			r.applier.Forget(ref)
		}
	}
}

// route filters out the echo of this cluster's own applies, which the
// reconcile that sent them already used, and hands the rest to next.
func (r *remote) route(next func(childcache.OwnerEvent)) func(childcache.OwnerEvent) {
	return func(ev childcache.OwnerEvent) {
		ref := ev.Child.Ref()
		if ev.Deleted {
			r.applier.Forget(ref)
		} else if r.applier.Observe(ref, ev.Child.GetResourceVersion()) {
			return
		}
		if next != nil {
			next(ev)
		}
	}
}
