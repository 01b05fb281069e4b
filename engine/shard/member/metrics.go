package member

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/loom-operator/loom/engine/shard"
)

// Metrics are a Member's Prometheus series; a nil *Metrics records
// nothing.
type Metrics struct {
	buckets prometheus.Gauge
	live    prometheus.Gauge
	moves   *prometheus.CounterVec
}

// NewMetrics registers the shard metrics with reg. loom run registers
// them with or without --sharded, so that their series exist; they stay
// 0 in a run that has no Member.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		buckets: prometheus.NewGauge(prometheus.GaugeOpts{Name: "loom_shard_buckets",
			Help: "Buckets of parents (of 64) this replica holds and may reconcile; 0 without --sharded."}),
		live: prometheus.NewGauge(prometheus.GaugeOpts{Name: "loom_shard_members",
			Help: "Live members of the shard group, as this replica last saw them; 0 without --sharded."}),
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_shard_moves_total",
			Help: "Buckets this replica claimed, released (to another replica or on exit) or dropped when its own Lease lapsed; 0 without --sharded."},
			[]string{"direction"}),
	}
	for _, d := range []string{"claim", "release", "lapse"} {
		m.moves.WithLabelValues(d)
	}
	if reg != nil {
		reg.MustRegister(m.buckets, m.live, m.moves)
	}
	return m
}

func (m *Metrics) moved(direction string, s shard.Set) {
	if m == nil || s == 0 {
		return
	}
	m.moves.WithLabelValues(direction).Add(float64(s.Len()))
}

func (m *Metrics) hold(s shard.Set) {
	if m != nil {
		m.buckets.Set(float64(s.Len()))
	}
}

func (m *Metrics) members(n int) {
	if m != nil {
		m.live.Set(float64(n))
	}
}
