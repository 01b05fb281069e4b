package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// OnFailure is what a failed step does.
type OnFailure string

const (
	// Rollback returns the moved parents to the stable revision and
	// rejects the candidate.
	Rollback OnFailure = "rollback"
	// Pause stops the rollout where it is until it is resumed.
	Pause OnFailure = "pause"
)

// DefaultReadyTimeout bounds a step when the policy names no readyTimeout.
const DefaultReadyTimeout = 5 * time.Minute

// Policy is a set's rollout block in loom.yaml.
type Policy struct {
	// Steps are the cumulative shares of parents on the candidate: a
	// count (1) or a percentage ("10%"). The last is "100%".
	Steps []intstr.IntOrString `json:"steps"`
	// ReadyTimeout is how long a step's parents have to be Ready.
	ReadyTimeout *metav1.Duration `json:"readyTimeout,omitempty"`
	// Soak is how long a step stays Ready before the next one starts.
	Soak *metav1.Duration `json:"soak,omitempty"`
	// OnFailure is rollback (the default) or pause.
	OnFailure OnFailure `json:"onFailure,omitempty"`
}

// Validate reports the first thing wrong with p, naming the field.
func (p *Policy) Validate() error {
	if len(p.Steps) == 0 {
		return errors.New("rollout.steps: at least one step is required")
	}
	lastPct, lastCount := -1, -1
	for i, s := range p.Steps {
		n, pct, err := parseStep(s)
		if err != nil {
			return fmt.Errorf("rollout.steps[%d]: %w", i, err)
		}
		if n == 0 {
			return fmt.Errorf("rollout.steps[%d]: a step of 0 moves no parent", i)
		}
		prev := &lastCount
		if pct {
			prev = &lastPct
		}
		if n < *prev {
			return fmt.Errorf("rollout.steps[%d]: %s is smaller than an earlier step", i, s.String())
		}
		*prev = n
	}
	if n, pct, _ := parseStep(p.Steps[len(p.Steps)-1]); !pct || n != 100 {
		return fmt.Errorf("rollout.steps: the last step must be \"100%%\", not %s", p.Steps[len(p.Steps)-1].String())
	}
	switch p.OnFailure {
	case "", Rollback, Pause:
	default:
		return fmt.Errorf("rollout.onFailure: %q is neither rollback nor pause", p.OnFailure)
	}
	if p.ReadyTimeout != nil && p.ReadyTimeout.Duration <= 0 {
		return errors.New("rollout.readyTimeout: must be positive")
	}
	if p.Soak != nil && p.Soak.Duration < 0 {
		return errors.New("rollout.soak: must not be negative")
	}
	return nil
}

// parseStep returns a step's number and whether it is a percentage.
func parseStep(s intstr.IntOrString) (int, bool, error) {
	if s.Type == intstr.Int {
		if s.IntVal < 0 {
			return 0, false, fmt.Errorf("%d is negative", s.IntVal)
		}
		return int(s.IntVal), false, nil
	}
	v, ok := strings.CutSuffix(s.StrVal, "%")
	if !ok {
		return 0, false, fmt.Errorf("%q is neither a count nor a percentage", s.StrVal)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 100 {
		return 0, false, fmt.Errorf("%q is not a percentage from 0%% to 100%%", s.StrVal)
	}
	return n, true, nil
}

// Count is how many of total parents step i (0-based) puts on the
// candidate: a count is capped at total, and a percentage is rounded up,
// so that any share above 0% of at least one parent moves one. A step
// past the last, or a policy that does not parse, counts every parent.
func (p *Policy) Count(i, total int) int {
	if i < 0 || i >= len(p.Steps) {
		return total
	}
	n, pct, err := parseStep(p.Steps[i])
	if err != nil {
		return total
	}
	if pct {
		n = int(math.Ceil(float64(n) * float64(total) / 100))
	}
	return min(n, total)
}

// ReadyTimeoutOrDefault is the policy's readyTimeout or the default.
func (p *Policy) ReadyTimeoutOrDefault() time.Duration {
	if p.ReadyTimeout == nil {
		return DefaultReadyTimeout
	}
	return p.ReadyTimeout.Duration
}

// SoakOrZero is the policy's soak, 0 when unset.
func (p *Policy) SoakOrZero() time.Duration {
	if p.Soak == nil {
		return 0
	}
	return p.Soak.Duration
}

// OnFailureOrDefault is the policy's onFailure or the default.
func (p *Policy) OnFailureOrDefault() OnFailure {
	if p.OnFailure == "" {
		return Rollback
	}
	return p.OnFailure
}
