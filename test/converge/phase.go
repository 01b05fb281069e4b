package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/loom-operator/loom/engine/render"
)

// The kinds of phase.
const (
	kindBase = "base"
	kindLoom = "loom"
)

// bench is what every phase shares.
type bench struct {
	opts options
	// cfg and client are the creator's and the harness's: not counted.
	cfg    *rest.Config
	client dynamic.Interface
	// rc reads the API server's /metrics.
	rc      rest.Interface
	set     *render.Set
	example *unstructured.Unstructured
	cpu     *cpuSampler
}

// phase is one phase: a namespace, its trackers, and its writer, which is
// either the baseline or Loom.
type phase struct {
	*bench
	kind, label, namespace string
	counter                *requestCounter
	parents, deploys       *tracker
	base                   *baseline
	loom                   *loomRun
}

// phaseResult is what one phase measured.
type phaseResult struct {
	kind, label, namespace string
	// warm is the warm-up round (one parent, cold writer); timed is the
	// timed round.
	warm, timed roundResult
	// heap is this process's live heap after the timed round, less what it
	// was before the phase: the harness's trackers in every phase, plus
	// Loom's caches and records in a loom phase.
	heap int64
	// total are the writer's requests over the whole phase, warm-up and
	// informer start included.
	total requests
}

// runPhase runs one phase from namespace creation to namespace deletion.
func (b *bench) runPhase(ctx context.Context, kind, label string) (res phaseResult, err error) {
	p := &phase{bench: b, kind: kind, label: label, counter: &requestCounter{}}
	waitQuiet(ctx, b.opts.quiet)
	// 1. A fresh namespace, deleted (and waited for) however the phase ends.
	if p.namespace, err = b.createNamespace(ctx, "bench-"+kind+"-"); err != nil {
		return res, err
	}
	res = phaseResult{kind: kind, label: label, namespace: p.namespace}
	logf("%s: namespace %s", label, p.namespace)
	tctx, stopTrackers := context.WithCancel(ctx)
	defer func() {
		if p.loom != nil {
			err = errors.Join(err, p.loom.stop())
		}
		stopTrackers()
		err = errors.Join(err, b.deleteNamespace(p.namespace))
	}()

	heapBefore := liveHeap()

	// 2. The harness's informers, synced before anything is created.
	p.parents = newTracker(b.client, myResourceGVR, p.namespace)
	p.deploys = newTracker(b.client, deploymentGVR, p.namespace)
	if err := errors.Join(p.parents.start(tctx), p.deploys.start(tctx)); err != nil {
		return res, err
	}

	// 3. The writer, on a config whose transport counts its requests.
	wcfg := rest.CopyConfig(b.cfg)
	wcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, n: p.counter} })
	wcfg.UserAgent = "converge-" + kind
	switch kind {
	case kindBase:
		client, err := dynamic.NewForConfig(wcfg)
		if err != nil {
			return res, fmt.Errorf("create baseline client: %w", err)
		}
		p.base = &baseline{client: client}
	case kindLoom:
		if p.loom, err = startLoom(ctx, wcfg, b.opts.templates, p.namespace, b.opts.workers); err != nil {
			return res, err
		}
	}

	// 4. The warm-up round, then the timed one.
	if res.warm, err = p.round(ctx, "warmup", 1, ""); err != nil {
		return res, fmt.Errorf("%s warm-up: %w", label, err)
	}
	logf("%s: warm-up done: t1 %s, t2 %s", label, secs(res.warm.t1), secs(res.warm.t2))
	if res.timed, err = p.round(ctx, "p", b.opts.parents, p.profilePath()); err != nil {
		return res, fmt.Errorf("%s: %w", label, err)
	}
	logf("%s: t1 %s, t2 %s", label, secs(res.timed.t1), secs(res.timed.t2))
	res.total = p.counter.snapshot()
	res.heap = liveHeap() - heapBefore
	if p.opts.memprofile != "" && label == kindLoom+"#1" {
		if err := writeHeapProfile(p.opts.memprofile); err != nil {
			return res, err
		}
	}
	return res, nil
}

// createNamespace creates a namespace with a generated name.
func (b *bench) createNamespace(ctx context.Context, prefix string) (string, error) {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"generateName": prefix},
	}}
	created, err := b.client.Resource(namespaceGVR).Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create namespace %s*: %w", prefix, err)
	}
	return created.GetName(), nil
}

// deleteNamespace deletes a namespace this program created and waits until
// it is gone, so that its garbage collection never overlaps the next phase.
// It runs even when the run was cancelled, within its own time limit.
func (b *bench) deleteNamespace(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.deleteTimeout)
	defer cancel()
	start := time.Now()
	err := b.client.Resource(namespaceGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := b.client.Resource(namespaceGVR).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("wait for namespace %s to be deleted: %w", name, err)
	}
	logf("namespace %s deleted in %s", name, secs(time.Since(start)))
	return nil
}

// roundResult is what one round measured. Durations count from t0, the
// moment before the first create.
type roundResult struct {
	n int
	// t1: every parent's status written; t2: loom: every parent Ready,
	// base: every Deployment available.
	t1, t2 time.Duration
	// avail: every Deployment available (both kinds).
	avail time.Duration
	// created: the last create returned; lastWrite: the baseline's last
	// status write returned.
	created, lastWrite time.Duration
	// at holds snapshots at "t1", "t2" and "end" (t2 plus -settle).
	at map[string]mark
	// api are the API server's writes from every client, at "t1" (just
	// after) and "end".
	api map[string]apiWrites
	// lat1 and lat2 are per parent: create returned → passed t1 / t2.
	lat1, lat2 []time.Duration
}

// mark is a snapshot of the counters, relative to t0.
type mark struct {
	writes requests
	cpu    cpuSample
	loom   loomStats
}

// stopwatch takes the snapshots of one round. Its marks are taken on the
// trackers' goroutines, the moment a goal is met.
type stopwatch struct {
	p    *phase
	mu   sync.Mutex
	t0   time.Time
	base mark
	at   map[string]mark
}

func (s *stopwatch) snap() mark {
	m := mark{writes: s.p.counter.snapshot(), cpu: s.p.cpu.sample()}
	if s.p.loom != nil {
		m.loom = s.p.loom.stats()
	}
	return m
}

func (s *stopwatch) start() {
	if s.p.loom != nil {
		queueMetricsFor("MyResource").resetPeaks()
	}
	b := s.snap()
	s.mu.Lock()
	s.base, s.at, s.t0 = b, map[string]mark{}, time.Now()
	s.mu.Unlock()
}

func (s *stopwatch) mark(name string) {
	m := s.snap()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[name] = mark{writes: m.writes.sub(s.base.writes), cpu: m.cpu.sub(s.base.cpu), loom: m.loom.sub(s.base.loom)}
}

func (s *stopwatch) since(t time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.IsZero() {
		return 0
	}
	return t.Sub(s.t0)
}

// profilePath is where the timed round's CPU profile goes: -cpuprofile for
// the first loom phase, with the phase's label appended for later ones
// (prof.loom2); empty for none.
func (p *phase) profilePath() string {
	if p.opts.cpuprofile == "" || p.kind != kindLoom {
		return ""
	}
	if p.label == kindLoom+"#1" {
		return p.opts.cpuprofile
	}
	return p.opts.cpuprofile + "." + strings.ReplaceAll(p.label, "#", "")
}

// profiler writes Loom's CPU profile for t0..t1 to path, and for t1..t2 to
// path.ready.
type profiler struct {
	path string
	f    *os.File
}

func (pr *profiler) start(suffix string) error {
	if pr == nil {
		return nil
	}
	f, err := os.Create(pr.path + suffix)
	if err != nil {
		return fmt.Errorf("create CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("start CPU profile: %w", err)
	}
	pr.f = f
	return nil
}

func (pr *profiler) stop() {
	if pr == nil || pr.f == nil {
		return
	}
	pprof.StopCPUProfile()
	pr.f.Close()
	logf("wrote CPU profile %s", pr.f.Name())
	pr.f = nil
}

// liveHeap is the bytes of live heap objects, after a full collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// writeHeapProfile writes the heap profile (as of the last GC) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
