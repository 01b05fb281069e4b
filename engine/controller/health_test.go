package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

// TestReady checks what Ready says in each state Loom passes through on
// its way up: nothing loaded, the CRD cache not synced, a controller
// whose informer has not synced or could not start, and the states that
// are ready. A controller whose parent kind has no CRD does not hold
// readiness back: it may wait for its CRD for good, and is started when
// the CRD comes.
func TestReady(t *testing.T) {
	tests := []struct {
		name  string
		setup func(m *Manager, c *Controller)
		want  string // "" for ready, else text the error holds
	}{
		{"template sets not loaded", func(m *Manager, c *Controller) { m.ctx = nil }, "template sets are not loaded yet"},
		{"CRD cache not synced", func(m *Manager, c *Controller) { m.crds = nil }, "the CRD cache has not synced yet"},
		{"informer not synced", func(m *Manager, c *Controller) {}, "the controller of Widget.example.com has not started: its parent cache has not synced yet"},
		{"start failed", func(m *Manager, c *Controller) { c.startErr.Store(&startResult{errors.New("forbidden")}) },
			"the controller of Widget.example.com has not started: forbidden"},
		{"parent kind not served", func(m *Manager, c *Controller) {
			c.startErr.Store(&startResult{fmt.Errorf("%w: widgets", errNotServed)})
		}, ""},
		{"running", func(m *Manager, c *Controller) { c.running.Store(true) }, ""},
		{"no set runs", func(m *Manager, c *Controller) { delete(m.controllers, widgetGVK.GroupKind()) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newFakeManager(t, nil)
			m.ctx = context.Background()
			c := newWidgetController(m)
			m.controllers[widgetGVK.GroupKind()] = c
			tt.setup(m, c)
			err := m.Ready()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Ready() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Ready() = %v, want an error holding %q", err, tt.want)
			}
		})
	}
}

// TestReadyOnceStarted checks that a controller started for real makes
// Ready go from an error to nil once its parent informer has synced.
func TestReadyOnceStarted(t *testing.T) {
	m, _ := newFakeManager(t, nil)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
	defer cancel()
	m.ctx = ctx
	c := newWidgetController(m)
	m.controllers[widgetGVK.GroupKind()] = c
	if err := m.Ready(); err == nil {
		t.Fatal("Ready() = nil before the controller started")
	}
	if err := c.start(ctx, 1); err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := m.Ready(); err != nil {
		t.Errorf("Ready() = %v once started, want nil", err)
	}
	cancel()
	c.drain()
}

// TestReadyWhileAServedKindSyncs checks that a controller whose kind was
// not served, and is now, holds readiness back while its cache syncs: the
// earlier start's errNotServed must not excuse it any more.
func TestReadyWhileAServedKindSyncs(t *testing.T) {
	m, _ := newFakeManager(t, nil)
	m.ctx = context.Background()
	c := newWidgetController(m)
	m.controllers[widgetGVK.GroupKind()] = c
	c.startErr.Store(&startResult{fmt.Errorf("%w: widgets", errNotServed)})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
	cancel() // the start gets past discovery, then gives up waiting for the sync
	if err := c.start(ctx, 1); err == nil {
		t.Fatal("start with a cancelled context succeeded")
	}
	if err := m.Ready(); err == nil || !strings.Contains(err.Error(), "has not synced yet") {
		t.Errorf("Ready() = %v while the served kind's cache has not synced, want an error saying so", err)
	}
}

// TestLive checks Live's verdict from a controller's queue and the last
// time its workers moved: only work queued with no progress for longer
// than the bound (twice the reconcile timeout) is wedged.
func TestLive(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const timeout = time.Second // newFakeManager's ReconcileTimeout
	tests := []struct {
		name    string
		queued  int
		running bool
		moved   time.Duration // before now
		want    string        // "" for live
	}{
		{"idle for long with an empty queue", 0, true, time.Hour, ""},
		{"busy, moved within the bound", 5, true, 2 * timeout, ""},
		{"wedged: queued, no progress past the bound", 3, true, 2*timeout + time.Millisecond,
			"the workers of Widget.example.com have made no progress for 2.001s with 3 parents queued (the bound is 2s)"},
		{"not running (waiting for its CRD)", 0, false, time.Hour, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newFakeManager(t, nil)
			c := newWidgetController(m)
			m.controllers[widgetGVK.GroupKind()] = c
			c.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
			defer c.queue.ShutDown()
			for i := range tt.queued {
				c.queue.Add(cache.ObjectName{Namespace: "ns", Name: fmt.Sprint(i)})
			}
			c.running.Store(tt.running)
			now := t0.Add(time.Hour)
			c.progress.mark(now.Add(-tt.moved))
			err := m.Live(now)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Live() = %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("Live() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestWorkersMarkProgress checks that a controller marks progress when it
// starts and when its workers take and finish a reconcile, on the
// Manager's clock, so that Live sees a working controller as live.
func TestWorkersMarkProgress(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(t0)
	m, _ := newFakeManager(t, nil)
	m.opts.Clock = clk
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
	defer cancel()
	c := newWidgetController(m)
	m.controllers[widgetGVK.GroupKind()] = c
	if err := c.start(ctx, 1); err != nil {
		t.Fatalf("start: %v", err)
	}
	if got := c.progress.last(); !got.Equal(t0) {
		t.Errorf("progress after start = %v, want %v", got, t0)
	}
	t1 := t0.Add(time.Hour)
	clk.SetTime(t1)
	c.queue.Add(cache.ObjectName{Namespace: "ns", Name: "gone"}) // reconciled at once: no such parent
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return c.progress.last().Equal(t1) && c.queue.Len() == 0, nil
	}); err != nil {
		t.Fatalf("no progress marked at %v (last %v): %v", t1, c.progress.last(), err)
	}
	if err := m.Live(t1.Add(time.Hour)); err != nil {
		t.Errorf("Live() = %v with an empty queue, want nil", err)
	}
	cancel()
	c.drain()
}
