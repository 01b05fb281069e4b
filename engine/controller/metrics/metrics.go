package metrics

import (
	"time"

	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/rollouts"
	"github.com/loom-operator/loom/engine/object"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are Loom's Prometheus metrics, registered on a registry the
// caller owns (cmd/loom serves it on /metrics).
type Metrics struct {
	reconciles *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	changes    *prometheus.CounterVec
	// StatusWrites counts status writes, by parent kind.
	StatusWrites *prometheus.CounterVec
	// DriftRepairs counts children changed back, by parent kind.
	DriftRepairs *prometheus.CounterVec
	// DriftWarnings counts, by parent kind, the times a parent's Drifted
	// condition became True or changed (children in drift mode warn that
	// another writer changed, and Loom left).
	DriftWarnings *prometheus.CounterVec
	// Sets is the number of template sets loaded.
	Sets prometheus.Gauge
	// Reloads counts reloads, by set and result.
	Reloads *prometheus.CounterVec
	// Parents is loom_parents, which each parent controller's counts
	// join (Track) while it runs.
	Parents *ParentsCollector
	// Rollout holds the series of every set's rollout.
	Rollout rollouts.Metrics
	// MissingPermissions counts the RBAC permissions the sets need that
	// Loom lacks (identity.Permissions).
	MissingPermissions prometheus.Gauge
	// ClusterReachable is 1 for each workload cluster whose last reconcile
	// reached it, 0 for one that did not answer.
	ClusterReachable *prometheus.GaugeVec
}

// New returns the Metrics, registered on reg (nil: none).
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_reconcile_total", Help: "Reconciles by parent kind and result (success, error).",
		}, []string{"kind", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "loom_reconcile_duration_seconds", Help: "Time to reconcile one parent.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"kind"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_child_changes_total", Help: "Apply results for children by parent kind and action (created, configured, unchanged, pruned, orphaned, failed).",
		}, []string{"kind", "action"}),
		StatusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_status_writes_total", Help: "Status writes by parent kind.",
		}, []string{"kind"}),
		DriftRepairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_drift_reverted_total", Help: "Children that another writer had changed and Loom changed back, by parent kind.",
		}, []string{"kind"}),
		DriftWarnings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_drift_warned_total", Help: "Changes of a parent's Drifted condition to True or to other children or fields (drift mode warn: Loom left them), by parent kind.",
		}, []string{"kind"}),
		Sets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "loom_template_sets", Help: "Template sets loaded, each with the controller of its parent kind.",
		}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_template_reloads_total", Help: "Template set reloads by set and result (success, error).",
		}, []string{"set", "result"}),
		Parents: newParentsCollector(),
		Rollout: rollouts.NewMetrics(),
		MissingPermissions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "loom_rbac_missing_permissions", Help: "RBAC permissions that the template sets need (loom rbac) and Loom lacks; /readyz names them.",
		}),
		ClusterReachable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "loom_cluster_reachable", Help: "1 when the last reconcile that placed children in a workload cluster reached it, 0 when it did not answer.",
		}, []string{"cluster"}),
	}
	if reg != nil {
		reg.MustRegister(m.reconciles, m.duration, m.changes, m.StatusWrites, m.DriftRepairs, m.DriftWarnings, m.Sets, m.Reloads, m.Rollout.Step, m.Rollout.Parents,
			m.Parents, m.Rollout.Failures, m.MissingPermissions, m.ClusterReachable)
	}
	return m
}

// InitKind makes a parent kind's series exist, at 0, once its controller
// starts: reconciles by result, their duration, status writes, drift
// reverted and failed child changes. Dashboards then show the kind, and an
// alert on rate() or increase() sees the first error.
func (m *Metrics) InitKind(kind string) {
	m.reconciles.WithLabelValues(kind, "success").Add(0)
	m.reconciles.WithLabelValues(kind, "error").Add(0)
	m.duration.WithLabelValues(kind)
	m.StatusWrites.WithLabelValues(kind).Add(0)
	m.DriftRepairs.WithLabelValues(kind).Add(0)
	m.DriftWarnings.WithLabelValues(kind).Add(0)
	m.changes.WithLabelValues(kind, string(object.Failed)).Add(0)
}

// InitSet makes a template set's reload series exist, at 0, once it is
// loaded (dir is the set's folder, the set label of its reloads).
func (m *Metrics) InitSet(dir string) {
	m.Reloads.WithLabelValues(dir, "success").Add(0)
	m.Reloads.WithLabelValues(dir, "error").Add(0)
}

// RegisterLookupGauges registers, on reg (nil for none), gauges of what
// the lookup cache holds, read from stats when scraped.
func RegisterLookupGauges(reg prometheus.Registerer, stats func() childcache.Stats) {
	if reg == nil {
		return
	}
	gauge := func(name, help string, f func(childcache.Stats) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(f(stats())) })
	}
	reg.MustRegister(
		gauge("loom_lookup_informers", "Metadata informers running for templates' lookups.",
			func(s childcache.Stats) int { return s.Informers }),
		gauge("loom_lookup_watched_objects", "Objects (and namespaces listed) that templates' lookups read, each watched for the parents that read it.",
			func(s childcache.Stats) int { return s.Watched }),
		gauge("loom_lookup_cached_objects", "Looked-up objects whose JSON Loom keeps.",
			func(s childcache.Stats) int { return s.Cached }),
	)
}

// ObserveReconcile counts one reconcile of a parent of kind, which took d
// and returned err.
func (m *Metrics) ObserveReconcile(kind string, err error, d time.Duration) {
	result := "success"
	if err != nil {
		result = "error"
	}
	m.reconciles.WithLabelValues(kind, result).Inc()
	m.duration.WithLabelValues(kind).Observe(d.Seconds())
}

// ObserveChanges counts the apply results cs of a parent of kind.
func (m *Metrics) ObserveChanges(kind string, cs object.ChangeSet) {
	for _, r := range cs {
		m.changes.WithLabelValues(kind, string(r.Action)).Inc()
	}
}
