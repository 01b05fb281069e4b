package migrate

import "github.com/prometheus/client_golang/prometheus"

// metrics count the migrations and the parents they rewrote.
type metrics struct {
	runs    *prometheus.CounterVec
	parents *prometheus.CounterVec
}

// newMetrics registers the metrics on reg (nil: none).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_storage_migrations_total",
			Help: "Storage migrations of a CRD's stored parents, by CRD and result (done: status.storedVersions shrunk to the storage version; error: tried again).",
		}, []string{"crd", "result"}),
		parents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_storage_migration_parents_total",
			Help: "Parents Loom rewrote in their CRD's storage version, by resource.",
		}, []string{"resource"}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.parents)
	}
	return m
}
