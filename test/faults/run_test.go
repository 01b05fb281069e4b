//go:build e2e

package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// childTracker watches the children in a namespace (objects with Loom's
// labels) and records each one that is deleted, or replaced by an object
// of the same name with another UID. Its informers relist after a broken
// watch, so a delete missed while the API server was down still shows,
// as a DeletedFinalStateUnknown or as a new UID.
type childTracker struct {
	mu   sync.Mutex
	uids map[string]types.UID // "resource/name" → the first UID seen
	lost []string             // "resource/name: what happened"
}

// trackChildren starts a tracker over gvrs in ns; it stops when the test
// ends.
func trackChildren(t *testing.T, ns string, gvrs ...schema.GroupVersionResource) *childTracker {
	t.Helper()
	e := env.From(t)
	c := &childTracker{uids: map[string]types.UID{}}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(e.Dyn, 0, ns, func(o *metav1.ListOptions) {
		o.LabelSelector = "app.kubernetes.io/managed-by=loom"
	})
	for _, gvr := range gvrs {
		_, err := f.ForResource(gvr).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.seen(gvr, obj, "re-created") },
			UpdateFunc: func(_, obj any) { c.seen(gvr, obj, "replaced") },
			DeleteFunc: func(obj any) { c.deleted(gvr, obj) },
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); f.Shutdown() })
	f.Start(stop)
	for gvr, ok := range f.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("tracker cache of %s did not sync", gvr)
		}
	}
	return c
}

func (c *childTracker) seen(gvr schema.GroupVersionResource, obj any, what string) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	key := gvr.Resource + "/" + u.GetName()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.uids[key]; !ok {
		c.uids[key] = u.GetUID()
	} else if old != u.GetUID() {
		c.lost = append(c.lost, fmt.Sprintf("%s: %s (UID %s, was %s)", key, what, u.GetUID(), old))
		c.uids[key] = u.GetUID()
	}
}

func (c *childTracker) deleted(gvr schema.GroupVersionResource, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		c.mu.Lock()
		c.lost = append(c.lost, fmt.Sprintf("%s/%s: deleted", gvr.Resource, u.GetName()))
		c.mu.Unlock()
	}
}

// check fails the test if a child was deleted or replaced, other than
// one of the resources in mayGo.
func (c *childTracker) check(t *testing.T, mayGo ...string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var bad []string
	for _, l := range c.lost {
		resource, _, _ := strings.Cut(l, "/")
		if !containsString(mayGo, resource) {
			bad = append(bad, l)
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d children that should have stayed were deleted or replaced; the first ones:\n%s",
			len(bad), strings.Join(bad[:min(20, len(bad))], "\n"))
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// faultRun is one converge of many parents under a fault: a namespace,
// a Loom, the API server's write counts and a tracker of the children.
type faultRun struct {
	t       *testing.T
	e       *env.Env
	ns      string
	parents int
	loom    *loomProc
	meter   *writeMeter
	before  writes
	tracker *childTracker
	start   time.Time
	bumped  int // parents app-0 … whose spec bumpReplicas changed
}

// newRun makes a namespace and starts the tracker, the write meter and a
// Loom over templates in it.
func newRun(t *testing.T, templates string, loomArgs ...string) *faultRun {
	t.Helper()
	e := env.From(t)
	r := &faultRun{t: t, e: e, ns: e.NewNamespace(t)}
	r.tracker = trackChildren(t, r.ns, configMapGVR, deployGVR, serviceGVR, secretGVR)
	r.meter = newWriteMeter(t)
	r.loom = startLoom(t, templates, r.ns, loomArgs...)
	r.before = r.meter.snapshot(t)
	return r
}

// create creates the parents app-0 … app-<n-1>, with edit applied to each
// if not nil. The clock starts at the first create.
func (r *faultRun) create(n int, edit func(int, *unstructured.Unstructured)) {
	r.t.Helper()
	r.parents = n
	r.start = time.Now()
	createParents(r.t, r.ns, n, edit)
	r.t.Logf("%d parents created in %s", n, time.Since(r.start).Round(100*time.Millisecond))
}

// expect is what a run must end with.
type expect struct {
	// timeout bounds the time from the first create until every parent
	// (but the failing ones) is Ready.
	timeout time.Duration
	// perParent is the write budget: at most this many of Loom's writes
	// for each parent over the whole run, plus extra for the run. A
	// converge without faults costs 5 with the shipped set: three children
	// applied, a Building and a Ready status.
	perParent, extra float64
	// kinds are the children each parent has; none of the kinds in gone
	// may be left.
	kinds, gone []childKind
	// mayGo are the resources whose children may be deleted.
	mayGo []string
	// failing are the parents that are not expected to be Ready.
	failing map[string]bool
}

// finish waits until every parent but the failing ones is Ready, then
// checks that each has its children, that no child was deleted or replaced
// that should have stayed, that Loom goes quiet, and that its writes
// stayed within the budget. It returns how long the parents took to be
// Ready.
func (r *faultRun) finish(e expect) time.Duration {
	t := r.t
	t.Helper()
	took := waitReady(t, r.ns, r.parents-len(e.failing), e.failing, r.start, e.timeout)
	r.loom.mustRun(t)
	checkChildren(t, r.ns, e.kinds, e.gone, e.failing)
	r.checkBumped()
	r.tracker.check(t, e.mayGo...)
	t.Log(r.logSummary())
	quiet := r.quiesce()
	w := r.meter.snapshot(t).sub(r.before)
	loomWrites := w.sum(loomWrite)
	t.Logf("%d parents Ready %s after the first create, quiet %s later; Loom's writes: %.0f (%.2f per parent): %s",
		r.parents-len(e.failing), took.Round(100*time.Millisecond), quiet.Round(100*time.Millisecond),
		loomWrites, loomWrites/float64(r.parents), w.top(8, loomWrite))
	if limit := e.perParent*float64(r.parents) + e.extra; loomWrites > limit {
		t.Errorf("hot loop: Loom sent %.0f writes for %d parents, over the budget of %.0f per parent + %.0f (%.0f): %s",
			loomWrites, r.parents, e.perParent, e.extra, limit, w.top(10, loomWrite))
	}
	return took
}

// bumpReplicas changes the spec of parents app-0 … app-<n-1> (replicas
// 1 → 2), right before a fault, so that the fault cuts Loom's watches with
// these changes in flight.
func (r *faultRun) bumpReplicas(n int) {
	r.t.Helper()
	err := testutil.ForEach(context.Background(), n, 8, func(ctx context.Context, i int) error {
		_, err := r.e.Dyn.Resource(myresGVR).Namespace(r.ns).Patch(ctx, parentName(i), types.MergePatchType,
			[]byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{})
		return err
	})
	if err != nil {
		r.t.Fatalf("change the specs: %v", err)
	}
	r.bumped = n
}

// checkBumped fails unless the Deployment of every parent bumpReplicas
// changed has the new replicas.
func (r *faultRun) checkBumped() {
	r.t.Helper()
	var stale []string
	for i := range r.bumped {
		d, err := r.e.Kube.AppsV1().Deployments(r.ns).Get(context.Background(), parentName(i), metav1.GetOptions{})
		if err != nil {
			r.t.Fatal(err)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
			stale = append(stale, fmt.Sprintf("%s: %v", d.Name, d.Spec.Replicas))
		}
	}
	if len(stale) > 0 {
		r.t.Errorf("%d of the %d spec changes made before the fault never reached their Deployment (replicas): %s",
			len(stale), r.bumped, strings.Join(stale[:min(10, len(stale))], ", "))
	}
}

// restart restarts a cluster component with cluster.sh (args are more
// arguments to `cluster.sh restart NAME`), and returns its output. Meanwhile it
// scrapes the API server's metrics every 200 ms, so that the write counts
// miss as little as possible of what the server served before it went
// away.
func (r *faultRun) restart(component string, args ...string) string {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = r.meter.observe(ctx)
			time.Sleep(200 * time.Millisecond)
		}
	}()
	out := clusterScript(r.t, append([]string{"restart", component}, args...)...)
	cancel()
	<-done
	p, err := readProgress(context.Background(), r.e, r.ns, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("%s back %s after the first create: %s", component, time.Since(r.start).Round(100*time.Millisecond), p)
	return out
}

// logSummary describes Loom's failed reconciles, from its log.
func (r *faultRun) logSummary() string {
	var failed []string
	for _, l := range strings.Split(r.loom.Output(), "\n") {
		if strings.Contains(l, "Reconcile failed") {
			failed = append(failed, l)
		}
	}
	if len(failed) == 0 {
		return "no failed reconcile in Loom's log"
	}
	return fmt.Sprintf("%d failed reconciles in Loom's log, the first and the last:\n%s\n%s", len(failed), failed[0], failed[len(failed)-1])
}

// quiesce waits until Loom's writes (as the API server counts them) and
// its reconciles have not moved for 5 s in a row, and fails the test if
// that takes over 90 s: Loom is in a loop. It returns how long it took.
func (r *faultRun) quiesce() time.Duration {
	t := r.t
	t.Helper()
	start := time.Now()
	type mark struct{ writes, reconciles float64 }
	read := func() (mark, writes) {
		w := r.meter.snapshot(t)
		return mark{w.sum(loomWrite), r.loom.reconciles(t)}, w
	}
	last, lastW := read()
	since := time.Now()
	testutil.Poll(t, time.Second, 90*time.Second, "Loom goes quiet (no write, no reconcile for 5s)", func(context.Context) error {
		cur, w := read()
		if cur != last {
			err := fmt.Errorf("in the last %s: %.0f writes (%s), %.0f reconciles", time.Since(since).Round(time.Second),
				cur.writes-last.writes, w.sub(lastW).top(5, loomWrite), cur.reconciles-last.reconciles)
			last, lastW, since = cur, w, time.Now()
			return err
		}
		if time.Since(since) < 5*time.Second {
			return fmt.Errorf("quiet for only %s", time.Since(since).Round(time.Second))
		}
		return nil
	})
	return time.Since(start)
}
