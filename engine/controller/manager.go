package controller

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/clusters"
	"github.com/loom-operator/loom/engine/controller/crdinstall"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/controller/metrics"
	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/controller/reader"
	"github.com/loom-operator/loom/engine/controller/seed"
	"github.com/loom-operator/loom/engine/controller/transport"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/shard"
	"github.com/loom-operator/loom/internal/kubeclient"
	"github.com/loom-operator/loom/internal/templatewatch"
)

// Options configure a Manager.
type Options struct {
	// Config reaches the API server.
	Config *rest.Config
	// TemplatesDir holds the template sets, found recursively.
	TemplatesDir string
	// Workers is the number of parents reconciled at once, per parent kind.
	Workers int
	// Namespace limits Loom to one namespace; empty means all.
	Namespace string
	// ResyncPeriod is how often every parent is reconciled even when
	// nothing changed; 0 disables it.
	ResyncPeriod time.Duration
	// FieldManager is the server-side apply field manager.
	FieldManager string
	// Registry receives Loom's metrics; nil disables them.
	Registry prometheus.Registerer
	// Clock stamps condition transitions; nil means the real clock.
	Clock clock.PassiveClock
	// ReloadDebounce is how long the template watcher waits for a burst of
	// file events to settle before reloading.
	ReloadDebounce time.Duration
	// ReconcileTimeout bounds one reconcile, so that a request the API
	// server never answers frees its worker; 0 means 30s. It also bounds
	// how long shutdown waits for in-flight reconciles, and each request
	// sent outside a reconcile: discovery's, and a rollout's (in a
	// controller's start too). Every response, a watch's or an
	// informer's list's included, must begin within twice as long.
	ReconcileTimeout time.Duration
	// InstallCRDs makes Loom server-side apply each set's generated CRD
	// before it watches the parent kind, at start and on every reload,
	// and wait until it is established (ReconcileTimeout at most). A
	// change that would break stored parents is refused unless the set's
	// loom.yaml sets schema.allowBreakingChanges (see crdinstall).
	InstallCRDs bool
	// Shard, if set, makes this replica one of a group that shares the
	// parents: it watches and reconciles only the parents of the buckets
	// it holds, and the children of those (sharding.go).
	Shard Sharder
	// ShardServerFilter sends the held buckets to the API server as a
	// KEP-5866 shardSelector on parent lists and watches; a server without
	// the ShardedListAndWatch gate ignores it. Loom filters in any case.
	ShardServerFilter bool
	// LoomNamespace is Loom's namespace: its Secrets register the
	// workload clusters sets may place children in (engine/cluster).
	LoomNamespace string
	// AllowKubeconfigExec lets a registration's kubeconfig run a
	// credential plugin (cluster.Options.AllowExec).
	AllowKubeconfigExec bool
	// Converter returns a set's converter between its parent's versions;
	// nil means the set's own (pipeline.ConverterOf).
	Converter func(*render.Set) pipeline.Converter
	// Webhook is how the conversion webhook is served, for the sets' RBAC.
	Webhook identity.Webhook
	// CRDWebhook is where the CRDs --install-crds applies send conversions.
	CRDWebhook *crdinstall.Webhook
}

// Manager runs one parent controller per template set, the shared child
// informers, the CRD watch that starts controllers whose kind appears
// later, and the template watcher that reloads sets when files change.
type Manager struct {
	opts   Options
	client dynamic.Interface
	// slim and strip list and watch children and parents, packed from the
	// API server's JSON (packwatch.go).
	slim, strip *packwatch.Client
	mapper      *restmapper.DeferredDiscoveryRESTMapper
	applier     *apply.Applier
	// cache holds the children and the lookups of the cluster, from Run
	// on (nil before).
	cache childCache
	// seeds keeps the seeds of charts' random functions, from Run on.
	seeds     *seed.Store
	meta      metadata.Interface
	recorder  record.EventRecorder
	metrics   *metrics.Metrics
	broadcast record.EventBroadcaster

	mu          sync.Mutex
	ctx         context.Context
	controllers map[schema.GroupKind]*Controller
	// retired holds, per kind, the controller last stopped until it has
	// drained: the next controller of that kind starts after it.
	retired map[schema.GroupKind]*Controller
	// runs counts the controllers' goroutines, draining ones included.
	runs sync.WaitGroup
	dirs map[string]schema.GroupKind // set folder → parent kind
	crds cache.Store                 // CRDs, once synced
	// awaited is signalled when a controller or a parent starts to wait
	// for a kind that is not served (see rediscover).
	awaited chan struct{}
	// installer applies the sets' CRDs (InstallCRDs; nil without it);
	// used by Run, then by the template watcher only.
	installer *crdinstall.Installer
	// caps is the cluster's capabilities, for charts' .Capabilities.
	caps *reader.Capabilities
	// perms is what Loom may not do of what its sets need.
	perms *identity.Permissions
	// idents are the sets' ServiceAccounts Loom acts as.
	idents identity.Source
	// kube is the typed clients; registry the registered workload
	// clusters, and fleet the clients of those children are placed in,
	// from Run on.
	kube     *kubeclient.Clients
	registry *clusters.Registry
	fleet    *clusters.Fleet
}

// New builds a Manager. It loads no templates and contacts no server until
// Run.
func New(opts Options) (*Manager, error) {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.FieldManager == "" {
		opts.FieldManager = apply.FieldManager
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.ReloadDebounce <= 0 {
		opts.ReloadDebounce = 200 * time.Millisecond
	}
	if opts.ReconcileTimeout <= 0 {
		opts.ReconcileTimeout = 30 * time.Second
	}
	// Every request gets a deadline for its response to begin, twice
	// ReconcileTimeout (60s by default, the API server's own default
	// --request-timeout): see transport.ResponseDeadline.
	cfg := rest.CopyConfig(opts.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &transport.ResponseDeadline{Next: rt, D: 2 * opts.ReconcileTimeout}
	})
	if opts.Shard != nil {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return &transport.ShardGuard{Next: rt, Owner: opts.Shard}
		})
	}
	opts.Config = cfg
	httpClient, err := rest.HTTPClientFor(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("create HTTP client: %w", err)
	}
	client, err := dynamic.NewForConfigAndClient(opts.Config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("create dynamic client: %w", err)
	}
	slim, err := packwatch.NewClient(opts.Config, httpClient, packwatch.Child(opts.FieldManager))
	if err != nil {
		return nil, err
	}
	strip, err := packwatch.NewClient(opts.Config, httpClient, packwatch.Parent)
	if err != nil {
		return nil, err
	}
	// Discovery gets rest.Config.Timeout, which client-go makes the HTTP
	// client's timeout: discovery sends no watches, which that timeout
	// would cut (it covers reading the whole response). Loom's other
	// clients keep none and bound each call with its context instead.
	// (Discovery's requests carry no context to bound.)
	dcfg := rest.CopyConfig(opts.Config)
	dcfg.Timeout = opts.ReconcileTimeout
	disco, err := discovery.NewDiscoveryClientForConfig(dcfg)
	if err != nil {
		return nil, fmt.Errorf("create discovery client: %w", err)
	}
	kube, err := kubeclient.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("create clientset: %w", err)
	}
	mc, err := metadata.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("create metadata client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	m := &Manager{
		opts: opts, client: client, mapper: mapper, meta: mc, slim: slim, strip: strip, kube: kube,
		applier:     apply.New(client, mapper, opts.FieldManager, apply.WithOpenAPI(disco.OpenAPIV3())),
		recorder:    b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "loom"}),
		broadcast:   b,
		metrics:     metrics.New(opts.Registry),
		controllers: map[schema.GroupKind]*Controller{},
		retired:     map[schema.GroupKind]*Controller{},
		dirs:        map[string]schema.GroupKind{},
		awaited:     make(chan struct{}, 1),
		caps:        reader.NewCapabilities(disco),
		perms:       identity.NewPermissions(kube.AuthorizationV1().SelfSubjectAccessReviews(), opts.ReconcileTimeout, opts.Namespace, opts.InstallCRDs, opts.LoomNamespace, opts.Webhook),
	}
	if opts.InstallCRDs {
		m.installer = crdinstall.New(client, opts.FieldManager, m.recorder, opts.ReconcileTimeout).Migrating(disco, opts.Shard, opts.Registry)
		m.installer.SetWebhook(opts.CRDWebhook)
	}
	m.idents = identity.NewAccounts(opts.Config, httpClient.Transport, httpClient.Timeout, m.applier, kube.AuthorizationV1().SubjectAccessReviews())
	metrics.RegisterLookupGauges(opts.Registry, func() childcache.Stats {
		m.mu.Lock()
		cc := m.cache
		m.mu.Unlock()
		if cc == nil { // a Manager that never ran
			return childcache.Stats{}
		}
		return cc.Stats()
	})
	return m, nil
}

// Run loads the template sets, starts a controller for each, and blocks
// until ctx is done. On cancellation, in-flight reconciles finish before
// Run returns.
func (m *Manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	defer m.broadcast.Shutdown()
	sets, err := render.LoadAll(m.opts.TemplatesDir)
	if len(sets) == 0 {
		return fmt.Errorf("load templates: %w", err)
	}
	if err != nil {
		logger.Error(err, "Some template sets failed to load; they are retried when their files change")
	}
	// With InstallCRDs, a set whose CRD is refused does not start; the
	// others do. It is tried again on the next reload.
	refused, _ := m.installer.Install(ctx, sets)
	m.mu.Lock()
	m.ctx = ctx
	cfg := childcache.Config{
		Children: m.slim, Dynamic: m.client, Metadata: m.meta, Mapper: m.mapper,
		Namespace: m.opts.Namespace, Resync: m.opts.ResyncPeriod,
		Route: m.route, Synced: m.childSynced, Enqueue: m.enqueueParent,
	}
	m.registry = clusters.NewRegistry(ctx, m.kube.CoreV1(), m.opts.LoomNamespace, m.opts.ResyncPeriod, m.clustersChanged)
	fo := clusters.Options{AllowExec: m.opts.AllowKubeconfigExec, Deadline: 2 * m.opts.ReconcileTimeout,
		FieldManager: m.opts.FieldManager, Namespace: m.opts.Namespace, Resync: m.opts.ResyncPeriod, Owner: m.opts.Shard,
		QPS: m.opts.Config.QPS, Burst: m.opts.Config.Burst,
		Route: m.dispatch, Synced: m.childSynced, Enqueue: m.enqueueParent,
		Reachable: func(cl string, ok bool) {
			m.metrics.ClusterReachable.WithLabelValues(cl).Set(map[bool]float64{true: 1}[ok])
		}}
	if m.opts.Shard != nil {
		cfg.ParentUID, cfg.Held = transport.ParentUIDFrom, m.opts.Shard.Held
		fo.ParentUID, fo.Held = cfg.ParentUID, cfg.Held
	}
	m.cache = childcache.New(ctx, cfg)
	m.fleet = clusters.NewFleet(ctx, m.registry, fo)
	m.seeds = seed.NewStore(m.client)
	if sh := m.opts.Shard; sh != nil {
		sh.Subscribe(m.resharded)
	}
	for _, s := range sets {
		if refused[s.Dir] != nil {
			continue
		}
		// A second set for a kind is bad input, like a broken one: it is
		// rejected, and every other set runs.
		if err := m.addSetLocked(s); err != nil {
			logger.Error(err, "Template set rejected", "set", s.Dir)
		}
	}
	m.reportSchemaLocked(refused)
	m.metrics.Sets.Set(float64(len(m.dirs)))
	m.mu.Unlock()
	go m.watchCRDs(ctx)
	go m.perms.Watch(ctx, m.runningSets, func(missing int) { m.metrics.MissingPermissions.Set(float64(missing)) })
	reloadDone := make(chan struct{})
	go func() {
		defer close(reloadDone)
		if err := templatewatch.Run(ctx, m.opts.TemplatesDir, m.opts.ReloadDebounce, m.reload); err != nil {
			logger.Error(err, "Template watcher stopped; edits need a restart")
		}
	}()
	<-ctx.Done()
	logger.Info("Shutting down: draining in-flight reconciles")
	<-reloadDone // no controller is added after this
	m.runs.Wait()
	logger.Info("Shut down")
	return nil
}

// resharded follows a change of the buckets this replica holds: the
// children of buckets it let go are forgotten (their cache, and what the
// applier recorded of them), and each controller lists the parents it
// holds now.
func (m *Manager) resharded(held shard.Set) {
	for _, ref := range m.cache.Keep(held) {
		m.applier.Forget(ref)
	}
	m.fleet.Keep(held)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.controllers {
		c.Resharded()
	}
}

// addSetLocked registers a set's controller and runs it.
func (m *Manager) addSetLocked(s *render.Set) error {
	gk := s.ParentGVK().GroupKind()
	if other, ok := m.controllers[gk]; ok && other.Set().Dir != s.Dir {
		return fmt.Errorf("template sets %s and %s both render children of %s", other.Set().Dir, s.Dir, gk)
	}
	c := NewController(m.ctx, m.shared(), s)
	prev := m.retired[gk]
	delete(m.retired, gk) // c waits for it, and whoever follows c waits for c
	m.controllers[gk] = c
	m.dirs[s.Dir] = gk
	m.metrics.InitSet(s.Dir)
	m.runs.Add(1)
	go m.runController(c, prev)
	return nil
}

// shared returns what a parent controller uses of the Manager's: the same
// clients, caches and settings for every controller. It is called once
// Run has made the child cache and the seed store.
func (m *Manager) shared() *Shared {
	return &Shared{
		Client: m.client, Parents: m.strip, Mapper: m.mapper, Applier: m.applier, Cache: m.cache,
		Recorder: m.recorder, Metrics: m.metrics, Identities: m.idents, Seeds: m.seeds,
		Capabilities: m.caps.Get, KindAwaited: m.kindAwaited, Clusters: m.registry, Fleet: m.fleet, Converter: m.opts.Converter,
		FieldManager: m.opts.FieldManager, Namespace: m.opts.Namespace, ReconcileTimeout: m.opts.ReconcileTimeout,
		Resync: m.opts.ResyncPeriod, Clock: m.opts.Clock, Shard: m.opts.Shard, ShardServerFilter: m.opts.ShardServerFilter,
	}
}

// retireLocked stops the controller of gk. A controller started later for
// the same kind (another version of it, or the set added back) waits until
// this one's in-flight reconciles have finished.
func (m *Manager) retireLocked(gk schema.GroupKind) {
	c := m.controllers[gk]
	c.Cancel()
	delete(m.controllers, gk)
	m.retired[gk] = c
}

// runController runs c (Controller.Run) until its context is done, after
// prev, the controller c replaces (nil for none), has drained. Once c has
// drained, what its parents read is forgotten, before a controller that
// replaces it starts.
func (m *Manager) runController(c *Controller, prev *Controller) {
	defer m.runs.Done()
	c.Run(m.opts.Workers, prev, func() {
		m.mu.Lock()
		if gk := c.GVK().GroupKind(); m.retired[gk] == c {
			delete(m.retired, gk) // nothing waits for it any more: let it go
		}
		cc := m.cache
		m.mu.Unlock()
		// What its parents read goes with it; a controller that replaces it
		// starts after this, and reads again as it reconciles each parent.
		if cc != nil { // nil: a Manager that never ran
			cc.ForgetKind(c.GVK().GroupKind())
		}
	})
}

// route sends a child event to the controller of the child's owner. The
// echo of Loom's own apply is dropped: the reconcile that sent it already
// used the server's response.
func (m *Manager) route(ev childcache.OwnerEvent) {
	ref := ev.Child.Ref()
	if ev.Deleted {
		m.applier.Forget(ref)
	} else if m.applier.Observe(ref, ev.Child.GetResourceVersion()) {
		return
	}
	m.dispatch(ev)
}

// dispatch sends a child event, of any cluster, to the controller of the
// child's owner.
func (m *Manager) dispatch(ev childcache.OwnerEvent) {
	gv, err := schema.ParseGroupVersion(ev.Ref.APIVersion)
	if err != nil {
		return
	}
	m.mu.Lock()
	c := m.controllers[gv.WithKind(ev.Ref.Kind).GroupKind()]
	m.mu.Unlock()
	if c != nil {
		c.OnChild(ev)
	}
}

// enqueueParent re-reconciles one parent, if its kind's controller runs.
func (m *Manager) enqueueParent(p childcache.ParentKey) {
	m.mu.Lock()
	c := m.controllers[p.GroupKind]
	m.mu.Unlock()
	if c != nil {
		c.Enqueue(p.Name)
	}
}

// clustersChanged re-reconciles the parents of each set that may use one
// of the cluster registrations that changed.
func (m *Manager) clustersChanged(changed clusters.Change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.controllers {
		if changed.Affects(c.Set().Config.Clusters) {
			c.EnqueueAll()
		}
	}
}

// kindsChanged is called when CRDs change, and again while a kind is
// awaited (see rediscover): discovery is refreshed, pending
// controllers are started, and running ones re-reconcile the parents that
// wait for a child kind (it may be served now) or whose CRD had no status
// subresource (it may have one now). Other parents are left
// alone, so installing a CRD does not re-reconcile the whole cluster.
func (m *Manager) kindsChanged() {
	m.mapper.Reset()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.controllers {
		c.KindsChanged()
	}
}

// childSynced is called when a child kind's informer syncs after a
// reconcile gave up waiting for it (its list was forbidden, say): the
// parents that wait for a kind are reconciled again.
func (m *Manager) childSynced(schema.GroupResource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.controllers {
		c.EnqueueUnserved()
	}
}
