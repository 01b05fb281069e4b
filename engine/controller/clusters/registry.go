package clusters

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/config"
)

// DefaultNamespace is Loom's namespace when none is given: loom run's
// --loom-namespace out of a pod, and loom rbac's default.
const DefaultNamespace = "loom-system"

// Registry is the registered workload clusters: the Secrets of Loom's
// namespace that register one, as two informers hold them (those labelled
// cluster.LabelCluster, and those of Cluster API's type).
type Registry struct {
	ctx       context.Context // the Manager's: the informers run until it is done
	secrets   typedcorev1.SecretsGetter
	namespace string
	resync    time.Duration
	changed   func(Change)

	once sync.Once
	// refreshing serializes refresh, which both informers' handlers call:
	// a refresh that read the stores first must not set the
	// registrations last.
	refreshing sync.Mutex
	stores     []cache.Store
	synced     []cache.InformerSynced
	mu         sync.Mutex
	regs       map[string][]cluster.Registration // by name; two for a name claimed twice
	started    chan struct{}                     // closed once the informers have synced
}

// NewRegistry returns the registry of the clusters the Secrets of
// namespace ("": DefaultNamespace) register, read with secrets while ctx
// lasts. changed is called, from an
// informer's goroutine, with the registrations (before and after) of
// each name whose registration changed: added, removed, or its Secret's
// labels or kubeconfig changed. Nothing is read until Registrations is
// first called.
func NewRegistry(ctx context.Context, secrets typedcorev1.SecretsGetter, namespace string, resync time.Duration, changed func(Change)) *Registry {
	if namespace == "" {
		namespace = DefaultNamespace // never the Secrets of every namespace
	}
	return &Registry{ctx: ctx, secrets: secrets, namespace: namespace, resync: resync, changed: changed,
		regs: map[string][]cluster.Registration{}, started: make(chan struct{})}
}

// Namespace is Loom's namespace, whose Secrets register clusters.
func (r *Registry) Namespace() string { return r.namespace }

// Registrations returns every valid registration, sorted by name (a name
// two Secrets claim twice: the render refuses it as ambiguous). The
// first call starts the informers; every call waits, until ctx is done,
// for them to have synced, so that a render never takes a registered
// cluster for an unregistered one.
func (r *Registry) Registrations(ctx context.Context) ([]cluster.Registration, error) {
	r.once.Do(func() { r.start(r.ctx) })
	select {
	case <-r.started:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the cluster registrations (Secrets in namespace %s): %w", r.namespace, context.Cause(ctx))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return flatten(r.regs), nil
}

// Get returns the registration of the cluster name, if exactly one Secret
// registers it. It does not start the registry.
func (r *Registry) Get(name string) (cluster.Registration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if regs := r.regs[name]; len(regs) == 1 {
		return regs[0], true
	}
	return cluster.Registration{}, false
}

// start runs the two informers until ctx is done (the Manager's), and
// closes started once both have synced.
func (r *Registry) start(ctx context.Context) {
	selectors := []func(*metav1.ListOptions){
		func(o *metav1.ListOptions) { o.LabelSelector = cluster.LabelCluster },
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("type", string(cluster.SecretTypeClusterAPI)).String()
		},
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { r.refresh(ctx) },
		UpdateFunc: func(_, _ any) { r.refresh(ctx) },
		DeleteFunc: func(any) { r.refresh(ctx) },
	}
	for _, tweak := range selectors {
		client := r.secrets.Secrets(r.namespace)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				tweak(&o)
				return client.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				tweak(&o)
				return client.Watch(ctx, o)
			},
		}
		inf := cache.NewSharedIndexInformer(lw, &corev1.Secret{}, r.resync, cache.Indexers{})
		if _, err := inf.AddEventHandler(handler); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot watch the cluster registrations")
		}
		r.stores = append(r.stores, inf.GetStore())
		r.synced = append(r.synced, inf.HasSynced)
		go inf.Run(ctx.Done())
	}
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), r.synced...) {
			r.refresh(ctx)
			close(r.started)
		}
	}()
}

// refresh reads the registrations again from both informers' stores and
// calls changed with those that changed.
func (r *Registry) refresh(ctx context.Context) {
	r.refreshing.Lock()
	defer r.refreshing.Unlock()
	logger := klog.FromContext(ctx)
	next := map[string][]cluster.Registration{}
	seen := map[string]bool{}
	for _, s := range r.stores {
		for _, obj := range s.List() {
			sec, ok := obj.(*corev1.Secret)
			if !ok || seen[sec.Name] {
				continue // a Secret both informers hold
			}
			seen[sec.Name] = true
			reg, ok, err := cluster.FromSecret(sec, r.namespace)
			if err != nil {
				logger.Error(err, "Secret does not register a cluster", "secret", klog.KObj(sec))
			}
			if ok {
				next[reg.Name] = append(next[reg.Name], reg)
			}
		}
	}
	r.mu.Lock()
	prev := r.regs
	r.regs = next
	r.mu.Unlock()
	if d := Diff(prev, next); len(d) > 0 && r.changed != nil {
		logger.V(2).Info("Cluster registrations changed", "clusters", names(d))
		r.changed(d)
	}
}

// Diff returns the registrations, before (prev) and after (next), of each
// cluster name whose registrations differ: added, removed, claimed by
// another Secret, or whose Secret's labels or kubeconfig changed.
func Diff(prev, next map[string][]cluster.Registration) Change {
	var out Change
	for _, name := range slices.Sorted(maps.Keys(union(prev, next))) {
		a, b := prev[name], next[name]
		if !slices.EqualFunc(sorted(a), sorted(b), same) {
			out = append(out, a...)
			out = append(out, b...)
		}
	}
	return out
}

// Change is the registrations, before and after, of the clusters whose
// registration changed (Diff).
type Change []cluster.Registration

// Affects reports whether a set with loom.yaml's clusters rule may use
// any of the changed registrations: its parents render .Clusters from
// them, or place children in them.
func (ch Change) Affects(rule *config.Clusters) bool {
	if rule == nil || len(ch) == 0 {
		return false
	}
	sel, err := cluster.Select(ch, rule.Names, rule.Selector)
	return err != nil || len(sel) > 0
}

// same reports whether two registrations of one name are the same: the
// same Secret, labels and kubeconfig.
func same(a, b cluster.Registration) bool {
	return a.Secret == b.Secret && a.Source == b.Source && maps.Equal(a.Labels, b.Labels) && string(a.Kubeconfig) == string(b.Kubeconfig)
}

func sorted(regs []cluster.Registration) []cluster.Registration {
	return slices.SortedFunc(slices.Values(regs), func(a, b cluster.Registration) int {
		return strings.Compare(a.Secret.String(), b.Secret.String())
	})
}

func union(a, b map[string][]cluster.Registration) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// flatten returns every registration, sorted by name then Secret.
func flatten(m map[string][]cluster.Registration) []cluster.Registration {
	var out []cluster.Registration
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, sorted(m[name])...)
	}
	return out
}

func names(regs []cluster.Registration) []string {
	var out []string
	for _, r := range regs {
		if !slices.Contains(out, r.Name) {
			out = append(out, r.Name)
		}
	}
	return out
}
