package status

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// findingKinds are the kinds of finding, in the order Ready ranks them
// (most severe first), each with the reason it gives Ready and Degraded
// when it is the most severe: "" where it does not touch that condition.
// Degraded ranks the kinds it reads in the same order.
var findingKinds = []struct {
	name            string
	set             func(*findings)
	ready, degraded string
}{
	{"deleting", func(f *findings) { f.deleting = errors.New("children to keep are not released") }, ReasonDeletionBlocked, ReasonDeletionBlocked},
	{"rollout", func(f *findings) { f.rolloutErr = errors.New("no TemplateRevision") }, ReasonRolloutUnavailable, ReasonRolloutUnavailable},
	{"identity", func(f *findings) { f.identityErr = errors.New("no ServiceAccount") }, ReasonServiceAccountUnavailable, ReasonServiceAccountUnavailable},
	{"render", func(f *findings) { f.renderErr = errors.New("a.yaml:1: bad") }, ReasonRenderFailed, ReasonRenderFailed},
	{"apply", func(f *findings) { f.applyFailures = []string{"apply ConfigMap a: denied"} }, ReasonApplyFailed, ReasonApplyFailed},
	{"child", func(f *findings) { f.childFailures = []string{"Job j failed: BackoffLimitExceeded"} }, ReasonChildFailed, ReasonChildFailed},
	{"cycle", func(f *findings) { f.cycles = []string{"a and b wait for each other"} }, ReasonDependencyCycle, ReasonDependencyCycle},
	{"dependency", func(f *findings) { f.dependencies = []string{"b waits for a"} }, ReasonWaitingForDependency, ""},
	{"waiting", func(f *findings) { f.waiting = []string{"waiting for Deployment d: 0/1"} }, ReasonChildrenNotReady, ""},
	{"status template", func(f *findings) { f.templateProblems = []string{"status.url: no such key"} }, "", ReasonStatusTemplateFailed},
}

// lastFailure is the index in findingKinds of the last kind that makes
// the parent Failed.
const lastFailure = 6

// TestReasonPriority pins which finding gives Ready and Degraded their
// reason when several are present: for every pair of kinds of finding
// (and each alone, and none), the reason is the more severe one's; and
// the state that follows.
func TestReasonPriority(t *testing.T) {
	type want struct{ ready, degraded string }
	first := func(kinds ...int) want {
		w := want{ReasonAllChildrenReady, ReasonAsExpected}
		for i := len(kinds) - 1; i >= 0; i-- {
			if k := findingKinds[kinds[i]]; k.ready != "" {
				w.ready = k.ready
			}
		}
		for i := len(kinds) - 1; i >= 0; i-- {
			if k := findingKinds[kinds[i]]; k.degraded != "" {
				w.degraded = k.degraded
			}
		}
		return w
	}
	type tc struct {
		name  string
		kinds []int // ascending
	}
	tests := []tc{{"nothing", nil}}
	for i := range findingKinds {
		tests = append(tests, tc{findingKinds[i].name, []int{i}})
		for j := i + 1; j < len(findingKinds); j++ {
			tests = append(tests, tc{findingKinds[i].name + "+" + findingKinds[j].name, []int{i, j}})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := findings{counted: 2}
			for _, k := range tt.kinds {
				findingKinds[k].set(&f)
			}
			ready := f.ready()
			got := want{ready.Reason, f.degraded().Reason}
			if diff := cmp.Diff(first(tt.kinds...), got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("reasons mismatch (-want +got):\n%s", diff)
			}
			// The state: Deleting first, then Failed for any failure
			// (a status template's aside), then Ready or Building.
			wantState := StateReady
			switch {
			case len(tt.kinds) > 0 && findingKinds[tt.kinds[0]].name == "deleting":
				wantState = StateDeleting
			case len(tt.kinds) > 0 && tt.kinds[0] <= lastFailure:
				wantState = StateFailed
			case got.ready != ReasonAllChildrenReady:
				wantState = StateBuilding
			}
			if st := f.state(ready); st != wantState {
				t.Errorf("state = %s, want %s", st, wantState)
			}
		})
	}
}

// TestReasonPriorityFixed pins the ranking by name, apart from the table
// TestReasonPriority derives its expectations from, with Ready's and
// Degraded's status and Ready's message for a failure of the parent as a
// whole; and that a Reasoned render error gives its own reason in the
// render error's place.
func TestReasonPriorityFixed(t *testing.T) {
	seed := reasonedErr{ReasonSeedLost}
	tests := []struct {
		name         string
		f            findings
		ready        metav1.Condition
		degradedWhy  string
		degradedTrue bool
	}{
		{name: "deleting before rollout",
			f:     findings{deleting: errors.New("d"), rolloutErr: errors.New("r")},
			ready: metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse, Reason: ReasonDeletionBlocked, Message: "being deleted: d"}, degradedWhy: ReasonDeletionBlocked, degradedTrue: true},
		{name: "rollout before identity",
			f:     findings{rolloutErr: errors.New("r"), identityErr: errors.New("i")},
			ready: metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse, Reason: ReasonRolloutUnavailable, Message: "cannot tell which template revision to render: r"}, degradedWhy: ReasonRolloutUnavailable, degradedTrue: true},
		{name: "identity before render",
			f:     findings{identityErr: errors.New("i"), renderErr: seed},
			ready: metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse, Reason: ReasonServiceAccountUnavailable, Message: "cannot act as the set's ServiceAccount: i"}, degradedWhy: ReasonServiceAccountUnavailable, degradedTrue: true},
		{name: "a Reasoned render error before apply",
			f:     findings{renderErr: seed, applyFailures: []string{"a"}},
			ready: metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse, Reason: ReasonSeedLost, Message: "cannot render children: the seed is gone"}, degradedWhy: ReasonSeedLost, degradedTrue: true},
		{name: "apply before child",
			f:     findings{applyFailures: []string{"a"}, childFailures: []string{"c"}},
			ready: metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse, Reason: ReasonApplyFailed, Message: "a (and 1 more)"}, degradedWhy: ReasonApplyFailed, degradedTrue: true},
		{name: "child before cycle",
			f:     findings{childFailures: []string{"c"}, cycles: []string{"y"}},
			ready: metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse, Reason: ReasonChildFailed, Message: "c (and 1 more)"}, degradedWhy: ReasonChildFailed, degradedTrue: true},
		{name: "cycle before dependency and status template",
			f:     findings{cycles: []string{"y"}, dependencies: []string{"d"}, templateProblems: []string{"t"}},
			ready: metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse, Reason: ReasonDependencyCycle, Message: "y (and 1 more)"}, degradedWhy: ReasonDependencyCycle, degradedTrue: true},
		{name: "dependency before waiting; a status template failure alone",
			f:     findings{dependencies: []string{"d"}, waiting: []string{"w"}, templateProblems: []string{"t"}},
			ready: metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse, Reason: ReasonWaitingForDependency, Message: "d (and 1 more)"}, degradedWhy: ReasonStatusTemplateFailed, degradedTrue: true},
		{name: "only waiting",
			f:     findings{waiting: []string{"w"}},
			ready: metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse, Reason: ReasonChildrenNotReady, Message: "w"}, degradedWhy: ReasonAsExpected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.ready, tt.f.ready()); diff != "" {
				t.Errorf("Ready mismatch (-want +got):\n%s", diff)
			}
			d := tt.f.degraded()
			if d.Reason != tt.degradedWhy || (d.Status == metav1.ConditionTrue) != tt.degradedTrue {
				t.Errorf("Degraded = %s %s, want %s (True: %v)", d.Status, d.Reason, tt.degradedWhy, tt.degradedTrue)
			}
		})
	}
}
