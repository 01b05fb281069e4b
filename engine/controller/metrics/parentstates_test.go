package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/engine/pack"
)

// packedParent is a cached parent named name whose status.state is state
// ("" for none).
func packedParent(t *testing.T, name, state string) *pack.Packed {
	t.Helper()
	status := ""
	if state != "" {
		status = fmt.Sprintf(`,"status":{"observedGeneration":1,"state":%q}`, state)
	}
	p, err := pack.StripJSON([]byte(fmt.Sprintf(
		`{"apiVersion":"example.loom.dev/v1","kind":"MyResource","metadata":{"name":%q,"namespace":"ns","uid":"u-%s"}%s}`, name, name, status)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The counts follow the parent informer's events: a parent counts under
// its state until it changes state or goes, whichever way its delete is
// told (the object, or DeletedFinalStateUnknown after a missed watch).
func TestParentStates(t *testing.T) {
	type event func(t *testing.T, s *ParentStates)
	add := func(name, state string) event {
		return func(t *testing.T, s *ParentStates) { s.OnAdd(packedParent(t, name, state), false) }
	}
	update := func(name, from, to string) event {
		return func(t *testing.T, s *ParentStates) {
			s.OnUpdate(packedParent(t, name, from), packedParent(t, name, to))
		}
	}
	del := func(name, state string) event {
		return func(t *testing.T, s *ParentStates) { s.OnDelete(packedParent(t, name, state)) }
	}
	delUnknown := func(name, state string) event {
		return func(t *testing.T, s *ParentStates) {
			s.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/" + name, Obj: packedParent(t, name, state)})
		}
	}
	tests := []struct {
		name   string
		events []event
		want   map[string]int
	}{
		{name: "none", want: map[string]int{}},
		{name: "adds", events: []event{add("a", "Ready"), add("b", "Ready"), add("c", "Failed"), add("d", "")},
			want: map[string]int{"Ready": 2, "Failed": 1, "Unknown": 1}},
		{name: "a state change moves the parent", events: []event{add("a", "Building"), update("a", "Building", "Ready")},
			want: map[string]int{"Ready": 1}},
		{name: "a first status", events: []event{add("a", ""), update("a", "", "Building")},
			want: map[string]int{"Building": 1}},
		{name: "a resync counts once", events: []event{add("a", "Ready"), update("a", "Ready", "Ready")},
			want: map[string]int{"Ready": 1}},
		{name: "deleted", events: []event{add("a", "Ready"), add("b", "Failed"), update("b", "Failed", "Deleting"), del("b", "Deleting")},
			want: map[string]int{"Ready": 1}},
		{name: "deleted while the watch was down", events: []event{add("a", "Ready"), add("b", "Failed"), delUnknown("b", "Failed")},
			want: map[string]int{"Ready": 1}},
		{name: "a delete of something else is ignored", events: []event{add("a", "Ready"), func(t *testing.T, s *ParentStates) { s.OnDelete("not a parent") }},
			want: map[string]int{"Ready": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &ParentStates{}
			for _, e := range tt.events {
				e(t, s)
			}
			if diff := cmp.Diff(tt.want, s.counts()); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

// loom_parents has a series for every state of every running kind (a
// suspended parent counts under Suspended), zeros
// included, so that an alert on one state has a series to compare; two
// controllers of one kind (one draining, one starting) are summed; and a
// kind whose controller is gone has no series left.
func TestParentsMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	a, b, other := &ParentStates{}, &ParentStates{}, &ParentStates{}
	a.OnAdd(packedParent(t, "x", "Ready"), false)
	a.OnAdd(packedParent(t, "y", "Failed"), false)
	b.OnAdd(packedParent(t, "z", "Ready"), false)
	b.OnAdd(packedParent(t, "v", "Suspended"), false)
	other.OnAdd(packedParent(t, "w", ""), false)
	var ka, kb, ko int // distinct owners
	m.Parents.Track(&ka, "MyResource", a)
	m.Parents.Track(&kb, "MyResource", b)
	m.Parents.Track(&ko, "Other", other)
	want := `
# HELP loom_parents Parents by kind and status.state (Building, Ready, Failed, Deleting, Suspended; Unknown: no state written yet), as the parent cache holds them.
# TYPE loom_parents gauge
loom_parents{kind="MyResource",state="Building"} 0
loom_parents{kind="MyResource",state="Deleting"} 0
loom_parents{kind="MyResource",state="Failed"} 1
loom_parents{kind="MyResource",state="Ready"} 2
loom_parents{kind="MyResource",state="Suspended"} 1
loom_parents{kind="MyResource",state="Unknown"} 0
loom_parents{kind="Other",state="Building"} 0
loom_parents{kind="Other",state="Deleting"} 0
loom_parents{kind="Other",state="Failed"} 0
loom_parents{kind="Other",state="Ready"} 0
loom_parents{kind="Other",state="Suspended"} 0
loom_parents{kind="Other",state="Unknown"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "loom_parents"); err != nil {
		t.Error(err)
	}
	m.Parents.Untrack(&ko)
	if n := testutil.CollectAndCount(m.Parents, "loom_parents"); n != 6 {
		t.Errorf("%d series after the Other controller stopped, want 6", n)
	}
}
