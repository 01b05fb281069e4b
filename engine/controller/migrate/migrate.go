package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// crds is the CustomResourceDefinitions' resource.
var crds = apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// notLeading is how long a replica that is not the one to migrate waits
// before it looks again (the buckets may have moved to it).
const notLeading = time.Minute

// Options configure a Migrator.
type Options struct {
	// FieldManager names Loom's writes; a CRD is migrated only when it is
	// Loom's (Owns).
	FieldManager string
	// Owns says whether Loom installed the CRD (crdinstall.OwnsCRD).
	Owns func(crd *unstructured.Unstructured, manager string) bool
	// Single says whether this replica is the one that migrates now; nil
	// means it is.
	Single func() bool
	// Timeout bounds each request, and the wait for discovery to publish
	// the new storage version.
	Timeout time.Duration
	// Registry receives the metrics; nil for none.
	Registry prometheus.Registerer
}

// Migrator moves the stored parents of CRDs to their storage version, one
// CRD at a time, on one worker (see the package doc).
type Migrator struct {
	client  dynamic.Interface
	disco   discovery.DiscoveryInterface
	opts    Options
	queue   workqueue.TypedRateLimitingInterface[string]
	metrics *metrics
}

// New returns a Migrator that reads and writes through client and asks
// disco what the API server serves.
func New(client dynamic.Interface, disco discovery.DiscoveryInterface, opts Options) *Migrator {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	return &Migrator{client: client, disco: disco, opts: opts, metrics: newMetrics(opts.Registry),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "migrate"})}
}

// Enqueue asks for the CRD named name to be looked at: migrated if its
// status.storedVersions holds more than its storage version. A nil
// Migrator does nothing.
func (m *Migrator) Enqueue(name string) {
	if m != nil {
		m.queue.Add(name)
	}
}

// Run works the queue until ctx is done. A CRD whose migration failed is
// tried again with backoff.
func (m *Migrator) Run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		m.queue.ShutDown()
	}()
	logger := klog.FromContext(ctx)
	for {
		name, quit := m.queue.Get()
		if quit {
			return
		}
		func() {
			defer m.queue.Done(name)
			if m.opts.Single != nil && !m.opts.Single() {
				m.queue.Forget(name)
				m.queue.AddAfter(name, notLeading)
				return
			}
			if err := m.Migrate(ctx, name); err != nil {
				logger.Error(err, "Storage migration failed; it is tried again", "crd", name)
				m.metrics.runs.WithLabelValues(name, "error").Inc()
				m.queue.AddRateLimited(name)
				return
			}
			m.queue.Forget(name)
		}()
	}
}

// Migrate moves the stored parents of the CRD named name to its storage
// version and shrinks its status.storedVersions to it; a CRD with nothing
// to move, gone, or not Loom's is left as it is.
func (m *Migrator) Migrate(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx).WithValues("crd", name)
	def, u, err := m.readCRD(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	storage, stale := Plan(def)
	if len(stale) == 0 {
		return nil
	}
	if m.opts.Owns != nil && !m.opts.Owns(u, m.opts.FieldManager) {
		logger.V(2).Info("Not migrating the stored parents of a CRD Loom did not install", "storedVersions", def.Status.StoredVersions)
		return nil
	}
	gvr := schema.GroupVersionResource{Group: def.Spec.Group, Version: storage, Resource: def.Spec.Names.Plural}
	logger.Info("Migrating stored parents to the storage version", "storage", storage, "from", stale)
	if err := m.awaitStorage(ctx, gvr, def.Spec.Names.Kind); err != nil {
		return err
	}
	start := time.Now()
	n, how, err := m.move(ctx, gvr, def.Generation)
	if err != nil {
		return err
	}
	if err := m.shrink(ctx, name, def.Generation, storage); err != nil {
		return err
	}
	m.metrics.runs.WithLabelValues(name, "done").Inc()
	logger.Info("Stored parents migrated; storedVersions shrunk to the storage version",
		"storage", storage, "parents", n, "via", how, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// move rewrites every parent of gvr: through a StorageVersionMigration
// when the API server serves them and finishes one, else by itself. It
// returns how many parents it rewrote (-1 when the API server did) and
// how.
func (m *Migrator) move(ctx context.Context, gvr schema.GroupVersionResource, generation int64) (int, string, error) {
	groups, err := m.disco.ServerGroups()
	if err != nil {
		return 0, "", fmt.Errorf("discover storagemigration.k8s.io: %w", err)
	}
	if api := migrationAPI(groups); api != "" {
		err := m.viaAPI(ctx, api, gvr, generation)
		if err == nil {
			return -1, "StorageVersionMigration", nil
		}
		if !errors.Is(err, errNotRunning) {
			return 0, "", err
		}
		klog.FromContext(ctx).Info("No controller ran the StorageVersionMigration; rewriting the parents instead", "resource", gvr.GroupResource())
	}
	n, err := m.Rewrite(ctx, gvr)
	return n, "rewrite", err
}

// readCRD reads the CRD named name, typed and as read.
func (m *Migrator) readCRD(ctx context.Context, name string) (*apiextv1.CustomResourceDefinition, *unstructured.Unstructured, error) {
	rctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	u, err := m.client.Resource(crds).Get(rctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("read CRD %s: %w", name, err)
	}
	def := &apiextv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, def); err != nil {
		return nil, nil, fmt.Errorf("read CRD %s: %w", name, err)
	}
	return def, u, nil
}

// awaitStorage waits until discovery publishes the storage version's
// storageVersionHash for gvr: the API server then stores what it is sent
// in that version (a write sent before could still be encoded in the old
// one).
func (m *Migrator) awaitStorage(ctx context.Context, gvr schema.GroupVersionResource, kind string) error {
	want := StorageVersionHash(gvr.Group, gvr.Version, kind)
	seen := ""
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, m.opts.Timeout, true, func(context.Context) (bool, error) {
		list, err := m.disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			seen = err.Error()
			return false, nil
		}
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				seen = r.StorageVersionHash
				// An API server that publishes no hash cannot be asked.
				return r.StorageVersionHash == want || r.StorageVersionHash == "", nil
			}
		}
		seen = "resource not served"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the API server to store %s in %s (storageVersionHash %q, want %q): %w", gvr.GroupResource(), gvr.Version, seen, want, err)
	}
	return nil
}

// shrink patches the CRD's status.storedVersions to [storage], unless its
// generation moved since the migration began (the storage version may
// have changed): then the migration runs again. The patch carries the
// resourceVersion read, so a concurrent change is a conflict, read again.
func (m *Migrator) shrink(ctx context.Context, name string, generation int64, storage string) error {
	return retryConflict(func() error {
		def, _, err := m.readCRD(ctx, name)
		if err != nil {
			return err
		}
		if def.Generation != generation {
			return fmt.Errorf("CRD %s changed during the migration (generation %d, now %d): migrating again", name, generation, def.Generation)
		}
		patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"status":{"storedVersions":[%q]}}`, def.ResourceVersion, storage)
		rctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
		defer cancel()
		if _, err := m.client.Resource(crds).Patch(rctx, name, types.MergePatchType, []byte(patch),
			metav1.PatchOptions{FieldManager: m.opts.FieldManager}, "status"); err != nil {
			return fmt.Errorf("shrink status.storedVersions of CRD %s to [%s]: %w", name, storage, err)
		}
		return nil
	})
}
