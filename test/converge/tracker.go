package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// tracker watches one resource in one namespace and tells when every
// object a goal names has passed the goal's test. It is the harness's own
// informer: it sees what any client would see, with watch latency, the
// same way in every phase.
type tracker struct {
	inf cache.SharedIndexInformer

	mu    sync.Mutex
	goals []*goal
}

// goal is a set of object names waiting for a test to pass.
type goal struct {
	what    string
	test    func(*unstructured.Unstructured) bool
	total   int
	pending map[string]bool
	// passed is when each name first passed, as the informer saw it.
	passed map[string]time.Time
	onDone func(time.Time)
	doneAt time.Time
	done   chan struct{}
}

func newTracker(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string) *tracker {
	t := &tracker{}
	t.inf = dynamicinformer.NewFilteredDynamicInformer(client, gvr, namespace, 0, cache.Indexers{}, nil).Informer()
	_ = t.inf.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
		}
		return obj, nil
	})
	_, _ = t.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    t.observe,
		UpdateFunc: func(_, cur any) { t.observe(cur) },
	})
	return t
}

// start runs the informer until ctx is done and waits for it to sync.
func (t *tracker) start(ctx context.Context) error {
	go t.inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), t.inf.HasSynced) {
		return fmt.Errorf("wait for informer to sync: %w", context.Cause(ctx))
	}
	return nil
}

// expect registers a goal over names. onDone, if not nil, runs on the
// informer's goroutine the moment the last name passes; keep it short.
func (t *tracker) expect(what string, names []string, test func(*unstructured.Unstructured) bool, onDone func(time.Time)) *goal {
	g := &goal{
		what: what, test: test, total: len(names), onDone: onDone,
		pending: make(map[string]bool, len(names)), passed: make(map[string]time.Time, len(names)),
		done: make(chan struct{}),
	}
	for _, n := range names {
		g.pending[n] = true
	}
	t.mu.Lock()
	t.goals = append(t.goals, g)
	t.mu.Unlock()
	for _, obj := range t.inf.GetStore().List() {
		t.observe(obj)
	}
	return g
}

func (t *tracker) observe(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	now := time.Now()
	name := u.GetName()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, g := range t.goals {
		if !g.pending[name] || !g.test(u) {
			continue
		}
		delete(g.pending, name)
		g.passed[name] = now
		if len(g.pending) == 0 {
			g.doneAt = now
			if g.onDone != nil {
				g.onDone(now)
			}
			close(g.done)
		}
	}
}

// wait blocks until the goal is met, or fails with how far it got.
func (t *tracker) wait(ctx context.Context, g *goal) error {
	select {
	case <-g.done:
		return nil
	case <-ctx.Done():
		t.mu.Lock()
		left := len(g.pending)
		t.mu.Unlock()
		return fmt.Errorf("%s: %d of %d done: %w", g.what, g.total-left, g.total, context.Cause(ctx))
	}
}

// passedAt returns when name passed the goal (zero if it has not).
func (t *tracker) passedAt(g *goal, name string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return g.passed[name]
}

// statusWritten is t1's test: the status describes the current generation
// and lists the three children, so they were applied before it was written.
func statusWritten(u *unstructured.Unstructured) bool {
	gen, ok, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if !ok || gen != u.GetGeneration() {
		return false
	}
	children, _, _ := unstructured.NestedSlice(u.Object, "status", "children")
	return len(children) == 3
}

// ready is Loom's t2 test: the parent's Ready condition is True for the
// current generation.
func ready(u *unstructured.Unstructured) bool {
	if !statusWritten(u) {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

// available is the baseline's t2 test for a Deployment: kstatus calls it
// Current (observed generation, every replica updated, ready and
// available, and the Available condition True), the same judgement Loom's
// readiness makes of it.
func available(u *unstructured.Unstructured) bool {
	res, err := kstatus.Compute(u)
	return err == nil && res.Status == kstatus.CurrentStatus
}
