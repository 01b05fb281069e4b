package rollouts

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the series of every set's rollout. The Manager makes them
// once (NewMetrics) and registers them with its other metrics.
type Metrics struct {
	// Step is the current step of each set's rollout (loom_rollout_step).
	Step *prometheus.GaugeVec
	// Parents counts each set's parents by the revision they render
	// (loom_rollout_parents).
	Parents *prometheus.GaugeVec
	// Failures counts failed rollout steps by set and outcome
	// (loom_rollout_failures_total).
	Failures *prometheus.CounterVec
}

// Outcomes of a failed rollout step (loom_rollout_failures_total).
const (
	outcomePaused     = "paused"
	outcomeRolledBack = "rolled_back"
)

// NewMetrics makes the rollout series, registered nowhere yet.
func NewMetrics() Metrics {
	return Metrics{
		Step: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "loom_rollout_step", Help: "The current step of each template set's rollout, 1-based; 0 when none runs.",
		}, []string{"set"}),
		Parents: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "loom_rollout_parents", Help: "Parents of each template set by the revision they render (stable, candidate).",
		}, []string{"set", "revision"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_rollout_failures_total", Help: "Rollout steps that failed, by template set and what the policy's onFailure did (paused, rolled_back).",
		}, []string{"set", "outcome"}),
	}
}

// init makes set's rollout series exist from the start, at 0: its
// step and its failures by outcome, so that dashboards show them and an
// alert on increase() sees the first failure.
func (m Metrics) init(set string) {
	m.Step.WithLabelValues(set).Add(0)
	m.Parents.WithLabelValues(set, "stable").Add(0)
	m.Parents.WithLabelValues(set, "candidate").Add(0)
	m.Failures.WithLabelValues(set, outcomePaused).Add(0)
	m.Failures.WithLabelValues(set, outcomeRolledBack).Add(0)
}
