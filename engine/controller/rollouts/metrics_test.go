package rollouts

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/loom-operator/loom/engine/rollout"
)

// A failed step counts once, by what the policy's onFailure made of it:
// paused (the moved parents keep the candidate) or rolled_back. Aborts,
// which a user asks for, and the other events count nothing.
func TestRolloutFailureOutcomes(t *testing.T) {
	failed := rollout.Event{Warning: true, Reason: "RolloutFailed", Message: "step 1 of 3 of r2 failed"}
	tests := []struct {
		name string
		d    rollout.Decision
		want []string
	}{
		{name: "nothing happened", d: rollout.Decision{State: rollout.State{Phase: rollout.Progressing}}},
		{name: "paused", d: rollout.Decision{State: rollout.State{Phase: rollout.Failed}, Events: []rollout.Event{failed}},
			want: []string{outcomePaused}},
		{name: "rolled back", d: rollout.Decision{State: rollout.State{Phase: rollout.RolledBack}, Events: []rollout.Event{failed}},
			want: []string{outcomeRolledBack}},
		{name: "aborted", d: rollout.Decision{State: rollout.State{Phase: rollout.RolledBack},
			Events: []rollout.Event{{Warning: true, Reason: "RolloutAborted"}}}},
		{name: "started and stepped", d: rollout.Decision{State: rollout.State{Phase: rollout.Progressing},
			Events: []rollout.Event{{Reason: "RolloutStarted"}, {Reason: "RolloutStepComplete"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, rolloutFailureOutcomes(tt.d)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
		})
	}
}

// Every set has its failure series from the start, at 0, so that an
// increase() alert sees the first failure.
func TestRolloutFailuresInitialized(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics()
	reg.MustRegister(m.Step, m.Parents, m.Failures)
	m.init("web")
	m.Failures.WithLabelValues("web", outcomeRolledBack).Inc()
	want := `
# HELP loom_rollout_failures_total Rollout steps that failed, by template set and what the policy's onFailure did (paused, rolled_back).
# TYPE loom_rollout_failures_total counter
loom_rollout_failures_total{outcome="paused",set="web"} 0
loom_rollout_failures_total{outcome="rolled_back",set="web"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "loom_rollout_failures_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.Step, "loom_rollout_step"); n != 1 {
		t.Errorf("%d loom_rollout_step series, want 1", n)
	}
	if n := testutil.CollectAndCount(m.Parents, "loom_rollout_parents"); n != 2 {
		t.Errorf("%d loom_rollout_parents series, want 2 (stable, candidate)", n)
	}
}
