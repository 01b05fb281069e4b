package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/controller/clusters"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/controller/metrics"
	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/controller/reader"
	"github.com/loom-operator/loom/engine/controller/seed"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
)

// Shared is what every parent controller uses of what the Manager holds:
// the clients, caches and settings that the Manager builds once and hands
// to each controller it starts. It is the seam between a parent
// controller and the Manager: a controller reaches the Manager only
// through these, so that a test can build one with what it needs.
type Shared struct {
	// Client writes parents (status, finalizers, annotations) and reads
	// what the child cache does not hold.
	Client dynamic.Interface
	// Parents lists and watches parents, packed (packwatch.Parent).
	Parents *packwatch.Client
	// Mapper maps child kinds to their resources.
	Mapper meta.RESTMapper
	// Applier applies, prunes and releases children as Loom itself.
	Applier *apply.Applier
	// Cache holds the cluster's children and the lookups of templates.
	Cache childCache
	// Recorder records Events on parents.
	Recorder record.EventRecorder
	// Metrics are Loom's metrics.
	Metrics *metrics.Metrics
	// Identities are the sets' ServiceAccounts Loom acts as.
	Identities identity.Source
	// Seeds keeps the seeds of charts' random functions.
	Seeds *seed.Store
	// Capabilities returns the cluster's capabilities, for a chart's
	// .Capabilities.
	Capabilities reader.CapabilitiesFunc
	// KindAwaited tells the Manager that a controller or a parent started
	// to wait for a kind the cluster does not serve, so that discovery is
	// refreshed until it is.
	KindAwaited func()
	// Clusters are the registered workload clusters, which the renders
	// of sets with loom.yaml's clusters are given.
	Clusters *clusters.Registry
	// Fleet places children in the workload clusters.
	Fleet *clusters.Fleet
	// Converter returns a set's converter between its parent's versions
	// (Options.Converter); nil means the set's own (pipeline.ConverterOf).
	Converter func(*render.Set) pipeline.Converter

	// FieldManager is the server-side apply field manager.
	FieldManager string
	// Namespace limits Loom to one namespace; empty means all.
	Namespace string
	// ReconcileTimeout bounds one reconcile, and each request sent
	// outside one.
	ReconcileTimeout time.Duration
	// Resync is how often every parent is reconciled even when nothing
	// changed; 0 disables it.
	Resync time.Duration
	// Clock stamps condition transitions and progress.
	Clock clock.PassiveClock
	// Shard, if set, makes this replica reconcile only the parents of the
	// buckets it holds (sharding.go).
	Shard Sharder
	// ShardServerFilter sends the held buckets to the API server as a
	// shardSelector on parent lists and watches.
	ShardServerFilter bool
}
