package rollout

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/config"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

func policy(t *testing.T, src string) *config.Policy {
	t.Helper()
	var p config.Policy
	if err := yaml.UnmarshalStrict([]byte(src), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func TestKeyPutsCanariesFirst(t *testing.T) {
	for i := range 200 {
		uid := fmt.Sprintf("uid-%d", i)
		if Key(uid, true) >= 1<<63 || Key(uid, false) < 1<<63 {
			t.Fatalf("Key(%s): canary %x, other %x: canaries must sort before every other parent", uid, Key(uid, true), Key(uid, false))
		}
	}
}

// fleet is n parents named p0.. with UIDs u0.., on revision rev, Ready.
func fleet(n int, rev string) []Parent {
	ps := make([]Parent, n)
	for i := range ps {
		ps[i] = Parent{Name: fmt.Sprintf("ns/p%d", i), UID: fmt.Sprintf("u%d", i), Revision: rev, Ready: true}
	}
	return ps
}

// order is the parents' names in the order a rollout moves them.
func order(ps []Parent) []string {
	sorted := append([]Parent(nil), ps...)
	sort.Slice(sorted, func(i, j int) bool {
		return Key(sorted[i].UID, sorted[i].Canary) < Key(sorted[j].UID, sorted[j].Canary)
	})
	names := make([]string, len(sorted))
	for i, p := range sorted {
		names[i] = p.Name
	}
	return names
}

// moved is the names of the parents whose target under s is the candidate.
func moved(s State, ps []Parent) []string {
	var names []string
	for _, p := range order(ps) {
		for _, q := range ps {
			if q.Name == p && s.CandidateRevision != "" && s.Target(q.UID, q.Canary) == s.CandidateRevision {
				names = append(names, p)
			}
		}
	}
	return names
}

// converge marks the parents moved under s as reconciled with the
// candidate, and Ready unless bad names them.
func converge(s State, ps []Parent, bad ...string) {
	for i := range ps {
		p := &ps[i]
		p.Revision = s.Target(p.UID, p.Canary)
		p.Ready = true
		p.Degraded = false
		for _, b := range bad {
			if p.Name == b && p.Revision == s.CandidateRevision {
				p.Ready, p.Message = false, "Deployment does not have minimum availability"
			}
		}
	}
}

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func TestGoodRolloutMovesStepByStepInOrder(t *testing.T) {
	p := policy(t, "{steps: [1, 25%, 100%], readyTimeout: 1m, soak: 10s}")
	ps := fleet(20, "old")
	ps[13].Canary = true
	now := t0
	d := Decide(Input{Policy: p, Revision: "old", Parents: ps, Now: now})
	if d.State.Phase != Complete || d.State.StableRevision != "old" {
		t.Fatalf("first load: %+v, want stable old and Complete", d.State)
	}
	d = Decide(Input{Policy: p, Revision: "new", State: d.State, Parents: ps, Now: now})
	want := order(ps)
	if want[0] != "ns/p13" {
		t.Fatalf("the canary is not first: %v", want)
	}
	var steps [][]string
	var reasons []string
	for range 20 {
		steps = append(steps, moved(d.State, ps))
		for _, e := range d.Events {
			reasons = append(reasons, e.Reason)
		}
		if d.State.Phase == Complete {
			break
		}
		converge(d.State, ps)
		now = now.Add(11 * time.Second)
		d = Decide(Input{Policy: p, Revision: "new", State: d.State, Parents: ps, Now: now})
	}
	if d.State.Phase != Complete || d.State.StableRevision != "new" || d.State.CandidateRevision != "" {
		t.Fatalf("rollout did not complete: %+v", d.State)
	}
	// Each distinct moved set, in the order the steps took them.
	var distinct [][]string
	for _, s := range steps {
		if len(distinct) == 0 || len(distinct[len(distinct)-1]) != len(s) {
			distinct = append(distinct, s)
		}
	}
	wantSteps := [][]string{want[:1], want[:5], want[:20], nil}
	if diff := cmp.Diff(wantSteps, distinct); diff != "" {
		t.Errorf("moved parents per step (-want +got):\n%s", diff)
	}
	wantReasons := []string{"RolloutStarted", "RolloutStepComplete", "RolloutStepComplete", "RolloutComplete"}
	if diff := cmp.Diff(wantReasons, reasons); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// start returns the state of a rollout of "new" over "old" at step 1.
func start(t *testing.T, p *config.Policy, ps []Parent) State {
	t.Helper()
	d := Decide(Input{Policy: p, Revision: "old", Parents: ps, Now: t0})
	d = Decide(Input{Policy: p, Revision: "new", State: d.State, Parents: ps, Now: t0})
	if d.State.Phase != Progressing || d.State.Step != 1 {
		t.Fatalf("start: %+v", d.State)
	}
	return d.State
}

func TestFailedStep(t *testing.T) {
	tests := []struct {
		name      string
		policy    string
		degrade   bool // the moved parent goes Degraded rather than never Ready
		wait      time.Duration
		wantPhase Phase
		wantMoved int
		wantMsg   string
	}{
		{name: "not Ready in time, rollback", policy: "{steps: [1, 100%], readyTimeout: 30s}", wait: 31 * time.Second,
			wantPhase: RolledBack, wantMoved: 0, wantMsg: "was not Ready within 30s: Deployment does not have minimum availability"},
		{name: "not Ready in time, pause", policy: "{steps: [1, 100%], readyTimeout: 30s, onFailure: pause}", wait: 31 * time.Second,
			wantPhase: Failed, wantMoved: 1, wantMsg: "within 30s"},
		{name: "still within the timeout", policy: "{steps: [1, 100%], readyTimeout: 30s}", wait: 29 * time.Second,
			wantPhase: Progressing, wantMoved: 1, wantMsg: "waiting for"},
		{name: "Degraded fails at once", policy: "{steps: [1, 100%], readyTimeout: 30s}", degrade: true, wait: time.Second,
			wantPhase: RolledBack, wantMoved: 0, wantMsg: "is Degraded: render configmap.yaml:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy(t, tt.policy)
			ps := fleet(20, "old")
			s := start(t, p, ps)
			first := moved(s, ps)[0]
			converge(s, ps, first)
			if tt.degrade {
				for i := range ps {
					if ps[i].Name == first {
						ps[i].Degraded, ps[i].Message = true, "render configmap.yaml:3"
					}
				}
			}
			d := Decide(Input{Policy: p, Revision: "new", State: s, Parents: ps, Now: t0.Add(tt.wait)})
			if d.State.Phase != tt.wantPhase || d.State.Parents.Moved != tt.wantMoved || !strings.Contains(d.State.Message, tt.wantMsg) {
				t.Fatalf("got phase %s, moved %d, message %q; want %s, %d, containing %q", d.State.Phase, d.State.Parents.Moved, d.State.Message, tt.wantPhase, tt.wantMoved, tt.wantMsg)
			}
			if tt.wantPhase == Progressing {
				if d.After != time.Second {
					t.Errorf("After = %s, want the 1s left of the timeout", d.After)
				}
				return
			}
			if !strings.Contains(d.State.Message, first) || len(d.Events) != 1 || !d.Events[0].Warning || d.Events[0].Reason != "RolloutFailed" {
				t.Errorf("failure must name %s in a Warning RolloutFailed Event: %q, %+v", first, d.State.Message, d.Events)
			}
			if tt.wantPhase == RolledBack {
				if d.State.RejectedRevision != "new" || d.State.Target(ps[0].UID, false) != "old" {
					t.Fatalf("rollback must reject new and target old: %+v", d.State)
				}
				// The rejected candidate is not rolled out again.
				again := Decide(Input{Policy: p, Revision: "new", State: d.State, Parents: ps, Now: t0.Add(time.Hour)})
				if again.State.CandidateRevision != "" || len(again.Events) != 0 {
					t.Fatalf("a rejected candidate started again: %+v", again)
				}
			}
		})
	}
}

func TestPauseThenFixedEditThenResume(t *testing.T) {
	p := policy(t, "{steps: [1, 25%, 100%], readyTimeout: 30s, onFailure: pause}")
	ps := fleet(20, "old")
	s := start(t, p, ps)
	first := moved(s, ps)[0]
	converge(s, ps, first)
	d := Decide(Input{Policy: p, Revision: "new", State: s, Parents: ps, Now: t0.Add(time.Minute)})
	if d.State.Phase != Failed || d.State.FailedParent != first {
		t.Fatalf("want Failed naming %s: %+v", first, d.State)
	}
	// A fixed edit: the same first parent gets the fix, and nothing moves
	// on until resume.
	fixed := Decide(Input{Policy: p, Revision: "fixed", State: d.State, Parents: ps, Now: t0.Add(2 * time.Minute)})
	if fixed.State.Phase != Paused || fixed.State.CandidateRevision != "fixed" || cmp.Diff([]string{first}, moved(fixed.State, ps)) != "" {
		t.Fatalf("after a fixed edit: %+v, moved %v", fixed.State, moved(fixed.State, ps))
	}
	converge(fixed.State, ps)
	later := Decide(Input{Policy: p, Revision: "fixed", State: fixed.State, Parents: ps, Now: t0.Add(time.Hour)})
	if later.State.Phase != Paused || later.State.Step != 1 {
		t.Fatalf("moved on without a resume: %+v", later.State)
	}
	now := t0.Add(time.Hour)
	in := Input{Policy: p, Revision: "fixed", State: later.State, Parents: ps, Now: now, Controls: Controls{Resume: "r1"}}
	for range 10 {
		d = Decide(in)
		if d.State.Phase == Complete {
			break
		}
		converge(d.State, ps)
		now = now.Add(time.Second)
		in.State, in.Now = d.State, now
	}
	if d.State.Phase != Complete || d.State.StableRevision != "fixed" {
		t.Fatalf("resume did not complete the rollout: %+v", d.State)
	}
}

func TestControls(t *testing.T) {
	p := policy(t, "{steps: [1, 100%], readyTimeout: 30s}")
	ps := fleet(5, "old")
	s := start(t, p, ps)
	tests := []struct {
		name                      string
		controls                  Controls
		wantPhase                 Phase
		wantStable, wantCandidate string
	}{
		{name: "promote", controls: Controls{Promote: "new"}, wantPhase: Complete, wantStable: "new"},
		{name: "promote of another revision does nothing", controls: Controls{Promote: "older"}, wantPhase: Progressing, wantStable: "old", wantCandidate: "new"},
		{name: "abort", controls: Controls{Abort: "new"}, wantPhase: RolledBack, wantStable: "old"},
		{name: "pause", controls: Controls{Paused: true}, wantPhase: Paused, wantStable: "old", wantCandidate: "new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(Input{Policy: p, Revision: "new", State: s, Parents: ps, Now: t0.Add(time.Second), Controls: tt.controls})
			got := d.State
			if got.Phase != tt.wantPhase || got.StableRevision != tt.wantStable || got.CandidateRevision != tt.wantCandidate {
				t.Fatalf("got %s stable %q candidate %q, want %s %q %q", got.Phase, got.StableRevision, got.CandidateRevision, tt.wantPhase, tt.wantStable, tt.wantCandidate)
			}
		})
	}
	t.Run("a pause does not eat the ready timeout", func(t *testing.T) {
		d := Decide(Input{Policy: p, Revision: "new", State: s, Parents: ps, Now: t0.Add(10 * time.Minute), Controls: Controls{Paused: true}})
		d = Decide(Input{Policy: p, Revision: "new", State: d.State, Parents: ps, Now: t0.Add(11 * time.Minute)})
		if d.State.Phase != Progressing {
			t.Fatalf("a rollout paused past its timeout failed on resume: %+v", d.State)
		}
	})
}

func TestNewEditSupersedesCandidate(t *testing.T) {
	p := policy(t, "{steps: [1, 50%, 100%], readyTimeout: 30s}")
	ps := fleet(10, "old")
	s := start(t, p, ps)
	converge(s, ps)
	d := Decide(Input{Policy: p, Revision: "new", State: s, Parents: ps, Now: t0.Add(time.Second)})
	if d.State.Step != 2 || d.State.Parents.Moved != 5 {
		t.Fatalf("want step 2 with 5 moved: %+v", d.State)
	}
	d = Decide(Input{Policy: p, Revision: "newer", State: d.State, Parents: ps, Now: t0.Add(2 * time.Second)})
	if d.State.CandidateRevision != "newer" || d.State.StableRevision != "old" || d.State.Step != 1 || d.State.Parents.Moved != 1 {
		t.Fatalf("a new edit must restart from step 1 over the same stable revision: %+v", d.State)
	}
	if d.Events[0].Reason != "RolloutSuperseded" {
		t.Errorf("events: %+v", d.Events)
	}
	// Back to the stable revision: the candidate is withdrawn.
	d = Decide(Input{Policy: p, Revision: "old", State: d.State, Parents: ps, Now: t0.Add(3 * time.Second)})
	if d.State.Phase != Complete || d.State.CandidateRevision != "" || d.State.Target("u1", false) != "old" {
		t.Fatalf("reverting the edit: %+v", d.State)
	}
}

func TestParentsCreatedOrDeletedMidRollout(t *testing.T) {
	p := policy(t, "{steps: [25%, 50%, 100%], readyTimeout: 30s}")
	ps := fleet(8, "old")
	s := start(t, p, ps)
	before := moved(s, ps)
	if len(before) != 2 {
		t.Fatalf("25%% of 8: moved %v", before)
	}
	// Delete a moved parent and create 40 more: whoever was moved stays
	// moved, and the step is judged on who is moved now.
	var rest []Parent
	for _, q := range ps {
		if q.Name != before[0] {
			rest = append(rest, q)
		}
	}
	for i := range 40 {
		rest = append(rest, Parent{Name: fmt.Sprintf("ns/new%d", i), UID: fmt.Sprintf("n%d", i)})
	}
	after := moved(s, rest)
	for _, name := range before[1:] {
		if !contains(after, name) {
			t.Fatalf("%s was moved and is not any more: %v", name, after)
		}
	}
	converge(s, rest)
	d := Decide(Input{Policy: p, Revision: "new", State: s, Parents: rest, Now: t0.Add(time.Second)})
	if d.State.Step != 2 || d.State.Parents.Total != 47 {
		t.Fatalf("want step 2 of 47 parents: %+v", d.State)
	}
	// Step 2 moves at least half of the parents now, and keeps the moved.
	next := moved(d.State, rest)
	if len(next) < 24 {
		t.Errorf("50%% of 47 moved %d", len(next))
	}
	for _, name := range after {
		if !contains(next, name) {
			t.Errorf("%s moved back at step 2", name)
		}
	}
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func TestNoPolicyIsAllAtOnce(t *testing.T) {
	ps := fleet(3, "old")
	d := Decide(Input{Revision: "old", Parents: ps, Now: t0})
	d = Decide(Input{Revision: "new", State: d.State, Parents: ps, Now: t0})
	if d.State.StableRevision != "new" || d.State.CandidateRevision != "" || d.State.Phase != Complete {
		t.Fatalf("%+v", d.State)
	}
}

func TestDecideIsRestartSafe(t *testing.T) {
	// The state round-trips through JSON (the TemplateSet's status), and a
	// decision from the decoded state is the decision from the original.
	p := policy(t, "{steps: [1, 25%, 100%], readyTimeout: 1m, soak: 5s}")
	ps := fleet(20, "old")
	s := start(t, p, ps)
	converge(s, ps)
	d := Decide(Input{Policy: p, Revision: "new", State: s, Parents: ps, Now: t0.Add(time.Second)})
	raw, err := yaml.Marshal(d.State)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := yaml.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d.State, back); diff != "" {
		t.Fatalf("state does not round-trip (-want +got):\n%s", diff)
	}
	a := Decide(Input{Policy: p, Revision: "new", State: d.State, Parents: ps, Now: t0.Add(7 * time.Second)})
	b := Decide(Input{Policy: p, Revision: "new", State: back, Parents: ps, Now: t0.Add(7 * time.Second)})
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("a decision after a restart differs (-want +got):\n%s", diff)
	}
}

func TestThresholdEdges(t *testing.T) {
	ps := fleet(4, "old")
	if got := threshold(keysOf(ps), 0); got != 0 {
		t.Errorf("threshold of 0 parents = %d", got)
	}
	if got := threshold(keysOf(ps), 4); got != math.MaxUint64 {
		t.Errorf("threshold of all = %d", got)
	}
	s := State{CandidateRevision: "c", StableRevision: "s", Threshold: strconv.FormatUint(threshold(keysOf(ps), 2), 10), StepStartedAt: &metav1.Time{}}
	if got := len(moved(s, ps)); got != 2 {
		t.Errorf("moved %d, want 2", got)
	}
}

func TestDeletedParentsNeverMoveOthersBack(t *testing.T) {
	// 50% of 20 moves 10; the 10 not moved are deleted; the next step is
	// 60% of the 10 left, 6: the 10 moved must all stay moved.
	p := policy(t, "{steps: [50%, 60%, 100%], readyTimeout: 30s, soak: 10s}")
	ps := fleet(20, "old")
	s := start(t, p, ps)
	movedBefore := moved(s, ps)
	var left []Parent
	for _, q := range ps {
		if contains(movedBefore, q.Name) {
			left = append(left, q)
		}
	}
	converge(s, left)
	d := Decide(Input{Policy: p, Revision: "new", State: s, Parents: left, Now: t0.Add(time.Second)})
	d = Decide(Input{Policy: p, Revision: "new", State: d.State, Parents: left, Now: t0.Add(12 * time.Second)})
	if d.State.Step != 2 {
		t.Fatalf("want step 2: %+v", d.State)
	}
	if got := moved(d.State, left); len(got) != 10 {
		t.Fatalf("moved %d of the 10 moved before: %v", len(got), got)
	}
}

// Decisions while nothing changes return the same state, so that the
// controller writes nothing: not while a step waits, nor while it soaks.
func TestSameStateWhileNothingChanges(t *testing.T) {
	p := policy(t, "{steps: [1, 100%], readyTimeout: 5m, soak: 1m}")
	for _, ready := range []bool{false, true} {
		ps := fleet(5, "old")
		s := start(t, p, ps)
		if ready {
			converge(s, ps)
		}
		a := Decide(Input{Policy: p, Revision: "new", State: s, Parents: ps, Now: t0.Add(2 * time.Second)})
		b := Decide(Input{Policy: p, Revision: "new", State: a.State, Parents: ps, Now: t0.Add(17 * time.Second)})
		if diff := cmp.Diff(a.State, b.State); diff != "" {
			t.Errorf("ready %v: the state changed with the clock alone (-first +second):\n%s", ready, diff)
		}
	}
}

// BenchmarkDecide is one decision of a running step over 10 000 parents,
// what a set's rollout pays on every wake-up.
func BenchmarkDecide(b *testing.B) {
	p := &config.Policy{Steps: []intstr.IntOrString{intstr.FromString("50%"), intstr.FromString("100%")}}
	ps := fleet(10000, "old")
	d := Decide(Input{Policy: p, Revision: "old", Parents: ps, Now: t0})
	d = Decide(Input{Policy: p, Revision: "new", State: d.State, Parents: ps, Now: t0})
	b.ResetTimer()
	for b.Loop() {
		Decide(Input{Policy: p, Revision: "new", State: d.State, Parents: ps, Now: t0.Add(time.Second)})
	}
}
