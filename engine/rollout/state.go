package rollout

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

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
// of the set's TemplateSet object (v1alpha1.RolloutState, whose fields
// and their meaning it has): what Decide reads and returns.
type State v1alpha1.RolloutState

// Counts are the parents of a set, by revision and readiness.
type Counts = v1alpha1.ParentCounts

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
