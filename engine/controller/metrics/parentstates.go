package metrics

// Parents by state: the loom_parents gauge, counted from the parent
// informers' events.

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/status"
)

// stateUnknown is the state label of a parent without status.state: new,
// or not reconciled yet.
const stateUnknown = "Unknown"

// parentStateLabels are the states loom_parents always reports, zero or
// not, so that an alert on one of them has a series to compare.
var parentStateLabels = []string{status.StateBuilding, status.StateReady, status.StateFailed, status.StateDeleting, status.StateSuspended, stateUnknown}

// ParentStates counts one parent kind's parents by status.state. It is a
// handler of the parent informer's events: an add counts the parent under
// its state, an update moves it from the old object's state to the new
// one's, a delete uncounts the last state the cache held. The informer
// hands each handler the object it held before (an update's old, a
// delete's last state, even after a missed watch), so the counts follow
// the cache exactly with no per-parent memory; each event costs a scan of
// the parent's JSON for status.state (pack.Packed.StatusState), no decode.
type ParentStates struct {
	mu sync.Mutex
	n  map[string]int
}

// OnAdd counts a parent the cache added.
func (s *ParentStates) OnAdd(obj any, _ bool) { s.move("", parentStateOf(obj)) }

// OnUpdate moves a parent from its old state to its new one.
func (s *ParentStates) OnUpdate(old, cur any) { s.move(parentStateOf(old), parentStateOf(cur)) }

// OnDelete uncounts a parent the cache dropped.
func (s *ParentStates) OnDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	s.move(parentStateOf(obj), "")
}

// move uncounts one parent from state from and counts it under to; ""
// means none (an add, a delete, or an object that is not a parent).
func (s *ParentStates) move(from, to string) {
	if from == to {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	if from != "" {
		if s.n[from]--; s.n[from] <= 0 {
			delete(s.n, from)
		}
	}
	if to != "" {
		s.n[to]++
	}
}

// counts returns a copy of the counts, by state.
func (s *ParentStates) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.n))
	for k, v := range s.n {
		out[k] = v
	}
	return out
}

// parentStateOf is the state a cached parent counts under: its status.state,
// stateUnknown without one, "" for what is not a cached parent.
func parentStateOf(obj any) string {
	p, ok := packwatch.ID(obj)
	if !ok {
		return ""
	}
	if st := p.StatusState(); st != "" {
		return st
	}
	return stateUnknown
}

// ParentsCollector is loom_parents: the counts of every running parent
// controller, read when scraped.
type ParentsCollector struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	// sources are keyed by their controller, so that the controller that
	// replaces another of its kind adds to it until the other is gone.
	sources map[any]parentSource
}

type parentSource struct {
	kind   string
	states *ParentStates
}

func newParentsCollector() *ParentsCollector {
	return &ParentsCollector{
		desc: prometheus.NewDesc("loom_parents",
			"Parents by kind and status.state (Building, Ready, Failed, Deleting, Suspended; Unknown: no state written yet), as the parent cache holds them.",
			[]string{"kind", "state"}, nil),
		sources: map[any]parentSource{},
	}
}

// Track reports states, under kind, for owner until Untrack(owner).
func (p *ParentsCollector) Track(owner any, kind string, states *ParentStates) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sources[owner] = parentSource{kind: kind, states: states}
}

// Untrack stops reporting owner's counts.
func (p *ParentsCollector) Untrack(owner any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.sources, owner)
}

// Describe implements prometheus.Collector.
func (p *ParentsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

// Collect implements prometheus.Collector.
func (p *ParentsCollector) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	byKind := map[string]map[string]int{}
	for _, src := range p.sources {
		sum := byKind[src.kind]
		if sum == nil {
			sum = map[string]int{}
			for _, st := range parentStateLabels {
				sum[st] = 0
			}
			byKind[src.kind] = sum
		}
		for st, n := range src.states.counts() {
			sum[st] += n
		}
	}
	p.mu.Unlock()
	for kind, sum := range byKind {
		for st, n := range sum {
			ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, float64(n), kind, st)
		}
	}
}
