package rollout

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/api/v1alpha1"
)

// Phase is where a rollout stands: api/v1alpha1's, the TemplateSet's
// status.phase.
type Phase = v1alpha1.Phase

// The phases of a rollout, as TemplateSet's status.phase shows them.
const (
	// Complete: every parent is on the stable revision; nothing to roll out.
	Complete = v1alpha1.PhaseComplete
	// Progressing: a candidate moves step by step.
	Progressing = v1alpha1.PhaseProgressing
	// Paused: a user paused the rollout, or it waits for a resume after a
	// failed step was followed by a new edit.
	Paused = v1alpha1.PhasePaused
	// Failed: a step failed with onFailure: pause; the moved parents stay
	// on the candidate until resume, promote, abort or a new edit.
	Failed = v1alpha1.PhaseFailed
	// RolledBack: a step failed with onFailure: rollback, or the rollout
	// was aborted; every parent is back on the stable revision.
	RolledBack = v1alpha1.PhaseRolledBack
)

// State is a set's rollout as Loom keeps it in the cluster, in the status
// of the set's TemplateSet object: what Decide reads and returns.
type State struct {
	// StableRevision is the revision every parent not moved renders.
	StableRevision string `json:"stableRevision,omitempty"`
	// CandidateRevision is the revision being rolled out; empty for none.
	CandidateRevision string `json:"candidateRevision,omitempty"`
	// RejectedRevision is a candidate rolled back or aborted. It is not
	// rolled out again until the folder holds another revision.
	RejectedRevision string `json:"rejectedRevision,omitempty"`
	// Phase is where the rollout stands.
	Phase Phase `json:"phase,omitempty"`
	// Step is the current step, 1-based; 0 when no rollout runs.
	Step int `json:"step,omitempty"`
	// Steps is how many steps the policy has.
	Steps int `json:"steps,omitempty"`
	// Threshold moves the parents whose key is below it, as a decimal
	// uint64. It is fixed when a step starts and never lowered while the
	// candidate lasts.
	Threshold string `json:"threshold,omitempty"`
	// Halted is set by a failed step with onFailure: pause, and cleared by
	// a resume.
	Halted bool `json:"halted,omitempty"`
	// StepStartedAt is when the current step started.
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`
	// StepReadyAt is when the current step's parents were all Ready; its
	// soak counts from then.
	StepReadyAt *metav1.Time `json:"stepReadyAt,omitempty"`
	// ObservedResume is the last spec.resume token acted on.
	ObservedResume string `json:"observedResume,omitempty"`
	// FailedParent names the parent whose failure stopped the step.
	FailedParent string `json:"failedParent,omitempty"`
	// Message says what the rollout is doing or why it stopped.
	Message string `json:"message,omitempty"`
	// Parents counts the parents by where they are.
	Parents Counts `json:"parents"`
}

// Counts are the parents of a set, by revision and readiness.
type Counts struct {
	// Total is every parent of the set's kind.
	Total int `json:"total"`
	// Moved is the parents whose target is the candidate.
	Moved int `json:"moved"`
	// Ready is the moved parents that are Ready on the candidate.
	Ready int `json:"ready"`
}

// Parent is what Decide needs of one parent.
type Parent struct {
	// Name is namespace/name, for messages.
	Name string
	// UID orders the parent among the others.
	UID string
	// Canary is true for a parent labelled loom.dev/canary: "true".
	Canary bool
	// Revision is the revision its status says its children come from.
	Revision string
	// Ready is Ready=True for its current generation.
	Ready bool
	// Degraded is Degraded=True for its current generation.
	Degraded bool
	// Message is its Ready (or Degraded) condition's message.
	Message string
}

// CanaryLabel marks the parents a rollout moves first.
const CanaryLabel = "loom.dev/canary"

// Key orders parents for a rollout: canaries first, then the others, each
// group in an order fixed by a hash of the UID.
func Key(uid string, canary bool) uint64 {
	sum := sha256.Sum256([]byte(uid))
	k := binary.BigEndian.Uint64(sum[:8]) >> 1
	if !canary {
		k |= 1 << 63
	}
	return k
}

// Target is the revision parent's children render from under s.
func (s *State) Target(uid string, canary bool) string { return s.TargetOf(Key(uid, canary)) }

// TargetOf is Target for a parent whose Key is key.
func (s *State) TargetOf(key uint64) string {
	if s.CandidateRevision == "" || !s.moves(key) {
		return s.StableRevision
	}
	return s.CandidateRevision
}

// moves reports whether key is below the threshold.
func (s *State) moves(key uint64) bool {
	t, err := strconv.ParseUint(s.Threshold, 10, 64)
	if err != nil {
		return false
	}
	if t == math.MaxUint64 {
		return true
	}
	return key < t
}

// threshold is the lowest threshold that moves the first n of the parents
// whose keys are keys.
func threshold(keys []uint64, n int) uint64 {
	if n <= 0 {
		return 0
	}
	if n >= len(keys) {
		return math.MaxUint64
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	return sorted[n-1] + 1
}

// keysOf is the Key of each parent, in order.
func keysOf(parents []Parent) []uint64 {
	keys := make([]uint64, len(parents))
	for i, p := range parents {
		keys[i] = Key(p.UID, p.Canary)
	}
	return keys
}
