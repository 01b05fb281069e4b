package rollout

import (
	"fmt"
	"strconv"
	"time"

	"github.com/loom-operator/loom/engine/config"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Controls are the user's requests, from the TemplateSet's spec.
type Controls struct {
	// Paused stops the rollout from taking its next step.
	Paused bool
	// Resume, when it differs from the last one acted on, retries a failed
	// step.
	Resume string
	// Promote, when it names the candidate, makes it stable at once.
	Promote string
	// Abort, when it names the candidate, rolls it back and rejects it.
	Abort string
	// Suspend stops every write Loom makes for the set's parents'
	// children (object.SuspensionOf); it does not stop the rollout's
	// decisions, which write only the TemplateSet and its revisions.
	Suspend bool
}

// Input is everything Decide reads.
type Input struct {
	// Policy is the set's rollout block; nil rolls out all at once.
	Policy *config.Policy
	// Revision is the revision the set's folder holds now.
	Revision string
	// State is the rollout as last written.
	State State
	// Controls are the user's requests.
	Controls Controls
	// Parents are every parent of the set's kind.
	Parents []Parent
	// Count is how many parents there are when Parents is nil (a set
	// without a rollout, whose parents are only counted).
	Count int
	// Now is the time of the decision.
	Now time.Time
}

// Event is something a decision did that users should hear of.
type Event struct {
	// Warning is true for a Warning Event, false for Normal.
	Warning bool
	// Reason is the Event's reason, e.g. RolloutStepComplete.
	Reason string
	// Message says what happened.
	Message string
}

// Decision is Decide's result.
type Decision struct {
	// State is the rollout's next state.
	State State
	// Events are what happened, in order.
	Events []Event
	// After is when Decide should run again though nothing changed (a
	// timeout or a soak ends); 0 for not before something changes.
	After time.Duration
}

// Decide moves a rollout on by what its parents show and what the user
// asked for. It is pure: the same input gives the same decision.
func Decide(in Input) Decision {
	d := &decider{in: in, s: in.State, keys: keysOf(in.Parents)}
	d.s.Parents = Counts{}
	d.revision()
	if d.s.CandidateRevision != "" {
		d.controls()
	}
	switch {
	case d.s.CandidateRevision == "" || d.s.Halted:
	case in.Controls.Paused:
		// A pause stops the clocks: the step's timeout and soak count
		// again from the resume.
		d.s.StepStartedAt, d.s.StepReadyAt = nil, nil
	default:
		d.step()
	}
	d.finish()
	return Decision{State: d.s, Events: d.events, After: d.after}
}

type decider struct {
	in     Input
	keys   []uint64 // each parent's Key, computed once per decision
	s      State
	events []Event
	after  time.Duration
}

func (d *decider) event(warning bool, reason, format string, args ...any) {
	d.events = append(d.events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// revision reacts to what the folder holds: a first revision becomes
// stable, a new one becomes the candidate, and the stable one again
// withdraws the candidate.
func (d *decider) revision() {
	rev, s := d.in.Revision, &d.s
	switch {
	case s.StableRevision == "":
		*s = State{StableRevision: rev, Phase: Complete}
	case rev == s.StableRevision:
		if s.CandidateRevision != "" {
			d.event(false, "RolloutWithdrawn", "the templates are back at the stable revision %s; candidate %s withdrawn", rev, s.CandidateRevision)
			d.clearCandidate(Complete)
		}
		s.RejectedRevision = ""
		if s.Phase == RolledBack {
			s.Phase = Complete
		}
	case d.in.Policy == nil:
		if s.CandidateRevision != "" || rev != s.StableRevision {
			d.event(false, "RevisionApplied", "revision %s applied to every parent at once (no rollout policy)", rev)
		}
		s.StableRevision, s.RejectedRevision = rev, ""
		d.clearCandidate(Complete)
	case rev == s.RejectedRevision, rev == s.CandidateRevision:
	default:
		if s.CandidateRevision != "" {
			d.event(false, "RolloutSuperseded", "candidate %s superseded by %s before it completed", s.CandidateRevision, rev)
		}
		halted := s.Halted
		d.clearCandidate(Progressing)
		s.CandidateRevision, s.RejectedRevision, s.Halted = rev, "", halted
		d.startStep(0)
		d.event(false, "RolloutStarted", "rolling out revision %s over stable %s in %d steps", rev, s.StableRevision, len(d.in.Policy.Steps))
	}
}

// controls acts on promote, abort and resume.
func (d *decider) controls() {
	c, s := d.in.Controls, &d.s
	switch {
	case c.Abort == s.CandidateRevision:
		d.event(true, "RolloutAborted", "candidate %s aborted; every parent is back on %s", s.CandidateRevision, s.StableRevision)
		rejected := s.CandidateRevision
		d.clearCandidate(RolledBack)
		s.RejectedRevision, s.Message = rejected, fmt.Sprintf("candidate %s was aborted", rejected)
		return
	case c.Promote == s.CandidateRevision:
		d.event(false, "RolloutPromoted", "candidate %s promoted to stable for every parent", s.CandidateRevision)
		s.StableRevision = s.CandidateRevision
		d.clearCandidate(Complete)
		return
	}
	if c.Resume != "" && c.Resume != s.ObservedResume {
		s.ObservedResume = c.Resume
		if s.Halted {
			d.event(false, "RolloutResumed", "step %d of %s retried after a resume", s.Step, s.CandidateRevision)
			s.Halted, s.FailedParent = false, ""
			s.StepStartedAt, s.StepReadyAt = d.now(), nil
		}
	}
}

// step judges the current step: it fails, waits, soaks or moves on.
func (d *decider) step() {
	s, p := &d.s, d.in.Policy
	if s.StepStartedAt == nil {
		s.StepStartedAt = d.now()
	}
	var notReady *Parent
	for i := range d.in.Parents {
		par := &d.in.Parents[i]
		if !s.moves(d.keys[i]) {
			continue
		}
		onCandidate := par.Revision == s.CandidateRevision
		if onCandidate && par.Degraded {
			d.fail(par, "is Degraded: "+par.Message)
			return
		}
		if !onCandidate || !par.Ready {
			if notReady == nil {
				notReady = par
			}
		}
	}
	now := d.in.Now
	if notReady != nil {
		s.StepReadyAt = nil
		left := p.ReadyTimeoutOrDefault() - now.Sub(s.StepStartedAt.Time)
		if left <= 0 {
			msg := fmt.Sprintf("was not Ready within %s", p.ReadyTimeoutOrDefault())
			if notReady.Revision != s.CandidateRevision {
				msg = fmt.Sprintf("was not reconciled with the candidate within %s", p.ReadyTimeoutOrDefault())
			}
			if notReady.Message != "" {
				msg += ": " + notReady.Message
			}
			d.fail(notReady, msg)
			return
		}
		d.wake(left)
		s.Message = fmt.Sprintf("step %d of %d: waiting for %s to be Ready", s.Step, s.Steps, notReady.Name)
		return
	}
	if s.StepReadyAt == nil {
		s.StepReadyAt = d.now()
	}
	if left := p.SoakOrZero() - now.Sub(s.StepReadyAt.Time); left > 0 {
		d.wake(left)
		s.Message = fmt.Sprintf("step %d of %d: Ready, soaking until %s", s.Step, s.Steps, s.StepReadyAt.Add(p.SoakOrZero()).UTC().Format(time.RFC3339))
		return
	}
	if s.Step >= len(p.Steps) {
		d.event(false, "RolloutComplete", "revision %s is stable: every parent is Ready on it", s.CandidateRevision)
		s.StableRevision = s.CandidateRevision
		d.clearCandidate(Complete)
		return
	}
	d.event(false, "RolloutStepComplete", "step %d of %d of %s is Ready; starting step %d", s.Step, s.Steps, s.CandidateRevision, s.Step+1)
	d.startStep(s.Step)
	d.step() // a step that moves no new parent is judged at once
}

// startStep starts step i (0-based): its threshold covers the first
// Count(i) parents, and is never lower than the last step's.
func (d *decider) startStep(i int) {
	s := &d.s
	t := threshold(d.keys, d.in.Policy.Count(i, len(d.in.Parents)))
	if i == len(d.in.Policy.Steps)-1 {
		t = ^uint64(0) // the last step moves every parent, including later ones
	}
	if old, err := strconv.ParseUint(s.Threshold, 10, 64); err == nil && old > t {
		t = old
	}
	s.Threshold = strconv.FormatUint(t, 10)
	s.Step, s.Steps, s.Phase = i+1, len(d.in.Policy.Steps), Progressing
	s.StepStartedAt, s.StepReadyAt = d.now(), nil
	s.Message = fmt.Sprintf("step %d of %d started", s.Step, s.Steps)
}

// fail ends a step by the policy's onFailure.
func (d *decider) fail(p *Parent, why string) {
	s := &d.s
	msg := fmt.Sprintf("step %d of %d of %s failed: %s %s", s.Step, s.Steps, s.CandidateRevision, p.Name, why)
	if d.in.Policy.OnFailureOrDefault() == config.Pause {
		d.event(true, "RolloutFailed", "%s; paused (resume, promote or abort)", msg)
		s.Halted, s.FailedParent, s.Message, s.Phase = true, p.Name, msg, Failed
		return
	}
	d.event(true, "RolloutFailed", "%s; rolled back to %s", msg, s.StableRevision)
	rejected := s.CandidateRevision
	d.clearCandidate(RolledBack)
	s.RejectedRevision, s.FailedParent, s.Message = rejected, p.Name, msg
}

// clearCandidate ends the candidate's rollout with phase.
func (d *decider) clearCandidate(phase Phase) {
	s := &d.s
	s.CandidateRevision, s.Threshold, s.Step, s.Steps = "", "", 0, 0
	s.StepStartedAt, s.StepReadyAt, s.Halted, s.FailedParent = nil, nil, false, ""
	s.Phase, s.Message = phase, ""
}

// finish sets the phase and the counts.
func (d *decider) finish() {
	s := &d.s
	switch {
	case s.CandidateRevision == "":
	case s.Halted && s.FailedParent != "":
		s.Phase = Failed
	case s.Halted:
		s.Phase, s.Message = Paused, "a new candidate after a failed step: resume to go on"
	case d.in.Controls.Paused:
		s.Phase, s.Message = Paused, fmt.Sprintf("paused at step %d of %d", s.Step, s.Steps)
	default:
		s.Phase = Progressing
	}
	s.Parents.Total = len(d.in.Parents)
	if d.in.Parents == nil {
		s.Parents.Total = d.in.Count
	}
	for i, p := range d.in.Parents {
		if s.CandidateRevision == "" || !s.moves(d.keys[i]) {
			continue
		}
		s.Parents.Moved++
		if p.Revision == s.CandidateRevision && p.Ready {
			s.Parents.Ready++
		}
	}
	if s.Phase == Complete && s.Message == "" {
		s.Message = fmt.Sprintf("every parent renders revision %s", s.StableRevision)
	}
}

func (d *decider) now() *metav1.Time {
	t := metav1.NewTime(d.in.Now.Truncate(time.Second))
	return &t
}

// wake asks for the next decision within left.
func (d *decider) wake(left time.Duration) {
	if d.after == 0 || left < d.after {
		d.after = left
	}
}
