package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/loom-operator/loom/engine/render"
)

// The kinds of phase.
const (
	kindBase = "base"
	kindLoom = "loom"
	// kindRemote is a loom phase whose children are in two clusters: the
	// -phases entry "remote" (phaseSpec.remote; its kind is kindLoom).
	kindRemote = "remote"
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
	// workload is the workload cluster of remote phases (nil without
	// one); remoteSet is -remote-templates' MyResource set.
	workload  *workloadCluster
	remoteSet *render.Set
}

// phase is one phase: a namespace, its trackers, and its writer, which is
// either the baseline or Loom.
type phase struct {
	*bench
	spec                   phaseSpec
	kind, label, namespace string
	counter                *requestCounter
	// parents and deploys are the harness's informers; deploys is nil on
	// a bare cluster, where no Deployment becomes available.
	parents, deploys *tracker
	base             *baseline
	loom             loomRunner
	// loomDir is Loom's working folder (its templates/ and its log).
	loomDir string
	// mems sample the RSS of Loom's processes, one per replica.
	mems []*memSampler
	// fail cancels the phase: a Loom process ended before it.
	fail context.CancelCauseFunc
	// loomTemplates is the template folder Loom gets a copy of, and
	// loomSet its MyResource set: -templates, or in a remote phase
	// -remote-templates.
	loomTemplates string
	loomSet       *render.Set
	// registered and remoteNS: a remote phase has registered the
	// workload cluster, and made its namespace there (remote.go).
	registered, remoteNS bool
}

// phaseResult is what one phase measured.
type phaseResult struct {
	kind, label, namespace string
	// spec is the phase's -phases entry: its parents and replicas.
	spec phaseSpec
	// balance is how a sharded phase's replicas came to share the
	// buckets before its warm-up.
	balance balance
	// warm is the warm-up round (one parent, cold writer); timed is the
	// timed round.
	warm, timed roundResult
	// heap is this process's live heap after the timed round, less what it
	// was before the phase: the harness's trackers in every phase, plus
	// Loom's caches and records in an in-process loom phase.
	heap int64
	// total are the writer's requests over the whole phase, warm-up and
	// informer start included, when counted.
	total requests
	// counted: the writer's requests were counted on its own transport.
	// Otherwise (Loom in its own process) its writes are the API server's
	// counts (apiWrites.writerRequests).
	counted bool
	// bare: the phase ran on a cluster without a controller-manager.
	bare bool
	// after is what a loom phase measured once its fleet had converged.
	after *loomAfter
	// takeovers are a sharded phase's handovers (handover.go).
	takeovers []takeover
	// restarts are its restarts after that (-restart; restart.go).
	restarts []restartResult
	// measured: every measurement of the phase was taken, so a failure
	// after them (its cleanup) does not lose its report.
	measured bool
}

// writes are the writer's writes in the timed round, t0 to at ("t1", "t2"
// or "end"): in a remote phase, its children's in both clusters.
func (r phaseResult) writes(at string) requests {
	if r.counted {
		return r.timed.at[at].writes
	}
	return writerRequestsIn(r.timed.api[at], r.timed.remoteAPI[at], r.bare)
}

// runPhase runs one phase from namespace creation to namespace deletion
// (on a bare cluster: until the namespace is empty).
func (b *bench) runPhase(ctx context.Context, spec phaseSpec, label string) (res phaseResult, err error) {
	kind := spec.kind
	p := &phase{bench: b, spec: spec, kind: kind, label: label, counter: &requestCounter{},
		loomTemplates: b.opts.templates, loomSet: b.set}
	if spec.remote {
		p.loomTemplates, p.loomSet = b.opts.remoteTemplates, b.remoteSet
	}
	waitQuiet(ctx, b.opts.quiet)
	// 1. A fresh namespace, deleted (or emptied) and waited for however
	//    the phase ends.
	if p.namespace, err = b.createNamespace(ctx, "bench-"+spec.name()+"-"); err != nil {
		return res, err
	}
	res = phaseResult{kind: kind, label: label, namespace: p.namespace, spec: spec, counted: true, bare: b.opts.bare}
	logf("%s: namespace %s", label, p.namespace)
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	tctx, stopTrackers := context.WithCancel(ctx)
	defer func() {
		stopTrackers()
		err = errors.Join(err, p.finish(err))
	}()

	heapBefore := liveHeap()

	// 2. The harness's informers, synced before anything is created.
	p.parents = newTracker(b.client, myResourceGVR, p.namespace)
	if err := p.parents.start(tctx); err != nil {
		return res, err
	}
	if !b.opts.bare {
		p.deploys = newTracker(b.client, deploymentGVR, p.namespace)
		if err := p.deploys.start(tctx); err != nil {
			return res, err
		}
	}

	// 3. The writer. The baseline's (and the in-process Loom's) config
	//    has a transport that counts its requests.
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
		if spec.remote {
			if err := p.registerWorkload(ctx); err != nil {
				return res, err
			}
		}
		if res.balance, err = p.startLoom(ctx, wcfg, fail); err != nil {
			return res, err
		}
		res.counted = b.opts.loomMode == modeInProcess
	}

	// 4. The warm-up round, then the timed one.
	if res.warm, err = p.round(ctx, "warmup", 1, ""); err != nil {
		return res, fmt.Errorf("%s warm-up: %w", label, err)
	}
	logf("%s: warm-up done: %s", label, res.warm.times())
	if res.timed, err = p.round(ctx, "p", spec.parents, p.profilePath()); err != nil {
		return res, fmt.Errorf("%s: %w", label, err)
	}
	logf("%s: %s", label, res.timed.times())
	res.total = p.counter.snapshot()
	res.heap = liveHeap() - heapBefore
	if p.opts.memprofile != "" && label == kindLoom+"#1" {
		if err := writeHeapProfile(p.opts.memprofile); err != nil {
			return res, err
		}
	}

	// 5. Loom, converged: its steady memory, then a full re-reconcile.
	if p.loom != nil {
		if res.after, err = p.afterConvergence(ctx); err != nil {
			return res, fmt.Errorf("%s: %w", label, err)
		}
		if res.takeovers, err = p.takeovers(ctx); err != nil {
			return res, fmt.Errorf("%s: %w", label, err)
		}
		if p.opts.restart {
			if res.restarts, err = p.restarts(ctx); err != nil {
				return res, fmt.Errorf("%s: %w", label, err)
			}
		}
	}
	res.measured = true
	return res, nil
}

// startLoom starts Loom, in this process or in its own (-loom-mode; one
// process per replica), on a copy of the templates, and waits until a
// sharded phase's replicas have shared the buckets out. A Loom process
// ending before the phase does cancels the phase with fail.
func (p *phase) startLoom(ctx context.Context, wcfg *rest.Config, fail context.CancelCauseFunc) (bal balance, err error) {
	dir, err := loomWorkdir(p.loomTemplates)
	if err != nil {
		return bal, err
	}
	defer func() {
		if p.loom == nil { // nothing ran there: nothing to keep
			err = errors.Join(err, os.RemoveAll(dir))
		}
	}()
	templates := filepath.Join(dir, "templates")
	if p.opts.loomMode == modeInProcess {
		l, err := startLoom(ctx, wcfg, templates, p.namespace, p.opts.workers)
		if err != nil {
			return bal, err
		}
		p.loom, p.loomDir = l, dir
		return bal, nil
	}
	if p.spec.sharded {
		ns, given := flagValue(p.opts.loomArgs, shardNSFlag)
		if !given {
			ns = defaultShardNS
		}
		if err := p.ensureNamespace(ctx, ns); err != nil {
			return bal, err
		}
	}
	g, err := startLoomGroup(ctx, p.loomOptions(), dir, p.spec)
	if err != nil {
		return bal, err
	}
	p.loom, p.loomDir, p.fail = g, dir, fail
	for i, l := range g.procs {
		p.cpu.watch("loom", l.pid())
		p.mems = append(p.mems, startMemSampler(l.pid(), 250*time.Millisecond))
		who := "loom"
		if len(g.procs) > 1 {
			who = fmt.Sprintf("loom replica %d", i+1)
		}
		p.watchExit(ctx, l, who)
	}
	if !p.spec.sharded {
		return bal, nil
	}
	if bal, err = waitBalanced(ctx, g, p.opts.balanceTimeout); err != nil {
		return bal, fmt.Errorf("%s: %w", p.label, err)
	}
	logf("%s: %d replicas balanced in %s: buckets %s", p.label, len(g.procs), secs(bal.took), bucketList(bal.buckets))
	return bal, nil
}

// watchExit cancels the phase if l ends before it does, unless it was
// made to (exitExpected).
func (p *phase) watchExit(ctx context.Context, l *loomProc, who string) {
	go func() {
		select {
		case <-l.exited():
			if !l.exitExpected.Load() {
				p.fail(fmt.Errorf("%s (pid %d) exited during the phase", who, l.pid()))
			}
		case <-ctx.Done():
		}
	}()
}

// finish stops Loom (printing its log's tail if the phase failed) and
// deletes what the phase created: the namespace, or on a bare cluster the
// parents and children in it. A remote phase first deletes its parents
// while Loom runs, so that Loom deletes their children in the workload
// cluster, and at the end its registration and its namespace there.
func (p *phase) finish(failed error) error {
	var errs []error
	if g, ok := p.loom.(*loomGroup); ok && p.spec.remote && g.running() {
		errs = append(errs, p.deleteParents())
	}
	if p.loom != nil {
		for _, m := range p.mems {
			m.finish()
		}
		p.cpu.unwatch("loom")
		stopErr := p.loom.stop()
		errs = append(errs, stopErr)
		if tail := p.loom.tail(); tail != "" && (failed != nil || stopErr != nil) {
			logf("%s: last lines of Loom's log %s:\n%s", p.label, filepath.Join(p.loomDir, "loom.log"), tail)
		}
		if failed == nil && stopErr == nil {
			errs = append(errs, os.RemoveAll(p.loomDir))
		} else {
			logf("%s: Loom's working folder, with its log, is kept: %s", p.label, p.loomDir)
		}
	}
	if p.spec.remote {
		errs = append(errs, p.releaseParents())
	}
	if p.opts.bare {
		errs = append(errs, p.emptyNamespace(p.namespace))
	} else {
		errs = append(errs, p.deleteNamespace(p.namespace))
	}
	if p.spec.remote {
		errs = append(errs, p.unregisterWorkload())
	}
	return errors.Join(errs...)
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

// roundResult is what one round measured. Durations count from t0, the
// moment before the first create.
type roundResult struct {
	n int
	// t1: every parent's status written; t2: loom: every parent Ready,
	// base: every Deployment available (0 on a bare cluster).
	t1, t2 time.Duration
	// avail: every Deployment available (both kinds).
	avail time.Duration
	// created: the last create returned; lastWrite: the baseline's last
	// status write returned.
	created, lastWrite time.Duration
	// at holds snapshots at "t1", "t2" and "end" (t2 plus -settle).
	at map[string]mark
	// api are the API server's writes from every client, at "t1" and "t2"
	// (just after each; no t2 on a bare cluster) and "end".
	api map[string]apiWrites
	// remoteAPI are the workload cluster's API server's requests, at the
	// same moments, in a remote phase (nil otherwise).
	remoteAPI map[string]apiWrites
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
		var err error
		if m.loom, err = s.p.loom.stats(context.Background()); err != nil {
			logf("%s: %v", s.p.label, err)
		}
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
