package controller

import (
	"time"

	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/rollouts"
	"github.com/loom-operator/loom/engine/object"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are Loom's Prometheus metrics, registered on a registry the
// caller owns (cmd/loom serves it on /metrics).
type metrics struct {
	reconciles   *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	changes      *prometheus.CounterVec
	statusWrites *prometheus.CounterVec
	driftRepairs *prometheus.CounterVec
	sets         prometheus.Gauge
	reloads      *prometheus.CounterVec
	parents      *parentsCollector
	// rollout holds the series of every set's rollout.
	rollout rollouts.Metrics
	// missingPermissions counts the RBAC permissions the sets need that
	// Loom lacks (identity.Permissions).
	missingPermissions prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
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
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_status_writes_total", Help: "Status writes by parent kind.",
		}, []string{"kind"}),
		driftRepairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_drift_reverted_total", Help: "Children that another writer had changed and Loom changed back, by parent kind.",
		}, []string{"kind"}),
		sets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "loom_template_sets", Help: "Template sets loaded, each with the controller of its parent kind.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_template_reloads_total", Help: "Template set reloads by set and result (success, error).",
		}, []string{"set", "result"}),
		parents: newParentsCollector(),
		rollout: rollouts.NewMetrics(),
		missingPermissions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "loom_rbac_missing_permissions", Help: "RBAC permissions that the template sets need (loom rbac) and Loom lacks; /readyz names them.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.reconciles, m.duration, m.changes, m.statusWrites, m.driftRepairs, m.sets, m.reloads, m.rollout.Step, m.rollout.Parents,
			m.parents, m.rollout.Failures, m.missingPermissions)
	}
	return m
}

// initKind makes a parent kind's series exist, at 0, once its controller
// starts: reconciles by result, their duration, status writes, drift
// reverted and failed child changes. Dashboards then show the kind, and an
// alert on rate() or increase() sees the first error.
func (m *metrics) initKind(kind string) {
	m.reconciles.WithLabelValues(kind, "success").Add(0)
	m.reconciles.WithLabelValues(kind, "error").Add(0)
	m.duration.WithLabelValues(kind)
	m.statusWrites.WithLabelValues(kind).Add(0)
	m.driftRepairs.WithLabelValues(kind).Add(0)
	m.changes.WithLabelValues(kind, string(object.Failed)).Add(0)
}

// initSet makes a template set's reload series exist, at 0, once it is
// loaded (dir is the set's folder, the set label of its reloads).
func (m *metrics) initSet(dir string) {
	m.reloads.WithLabelValues(dir, "success").Add(0)
	m.reloads.WithLabelValues(dir, "error").Add(0)
}

// registerLookupGauges registers, on reg (nil for none), gauges of what
// the lookup cache holds, read from stats when scraped.
func registerLookupGauges(reg prometheus.Registerer, stats func() childcache.Stats) {
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

func (m *metrics) observeReconcile(kind string, err error, d time.Duration) {
	result := "success"
	if err != nil {
		result = "error"
	}
	m.reconciles.WithLabelValues(kind, result).Inc()
	m.duration.WithLabelValues(kind).Observe(d.Seconds())
}

func (m *metrics) observeChanges(kind string, cs object.ChangeSet) {
	for _, r := range cs {
		m.changes.WithLabelValues(kind, string(r.Action)).Inc()
	}
}
