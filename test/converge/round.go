package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// round creates n parents named after prefix and waits until they have
// converged: t1 (every status written), then t2 (loom: every parent Ready;
// base: every Deployment available), which a bare cluster never reaches
// and is not waited for. With a profile path, the process's CPU profile
// covers the round.
func (p *phase) round(ctx context.Context, prefix string, n int, profile string) (roundResult, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, p.opts.timeout, errors.New("timed out (-timeout)"))
	defer cancel()
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	parents := parentsFor(p.example, p.namespace, prefix, n)
	if p.base != nil {
		if err := p.base.prepare(p.set, parents); err != nil {
			return roundResult{}, err
		}
	}

	// 1. Goals and marks. A goal's mark is taken the moment it is met.
	sw := &stopwatch{p: p, at: map[string]mark{}}
	g := p.expectGoals(sw, names(parents))
	var pr *profiler
	if profile != "" {
		pr = &profiler{path: profile}
	}

	// 2. The clock starts; the creator creates, and the baseline, if this
	//    is a base phase, converges each parent as soon as it is created.
	in, baseDone := p.startBaseline(ctx, n, fail)
	api0, remote0 := p.scrape(ctx), p.scrapeWorkload(ctx)
	if err := pr.start(""); err != nil {
		return roundResult{}, err
	}
	defer pr.stop()
	sw.start()
	created, err := create(ctx, p.client, parents, p.opts.workers, in)
	createdAt := time.Now()
	if in != nil {
		close(in)
	}
	if err != nil {
		return roundResult{}, err
	}

	// 3. Wait for t1, then t2.
	if err := p.parents.wait(ctx, g.applied); err != nil {
		return roundResult{}, err
	}
	pr.stop()
	api := map[string]apiWrites{"t1": p.scrape(ctx).sub(api0)}
	remote := map[string]apiWrites{"t1": p.scrapeWorkload(ctx).sub(remote0)}
	if !p.opts.bare {
		if err := pr.start(".ready"); err != nil {
			return roundResult{}, err
		}
		if err := errors.Join(p.parents.wait(ctx, g.final), p.deploys.wait(ctx, g.avail)); err != nil {
			return roundResult{}, err
		}
		pr.stop()
		api["t2"] = p.scrape(ctx).sub(api0)
		remote["t2"] = p.scrapeWorkload(ctx).sub(remote0)
	}
	if p.base != nil {
		if err := <-baseDone; err != nil {
			return roundResult{}, err
		}
	}
	// Events are sent in the background; let the last ones go out.
	time.Sleep(p.opts.settle)
	sw.mark("end")
	api["end"] = p.scrape(ctx).sub(api0)
	remote["end"] = p.scrapeWorkload(ctx).sub(remote0)
	r := p.result(sw, n, g, parents, created, createdAt)
	r.api = api
	if p.spec.remote {
		r.remoteAPI = remote
	}
	return r, nil
}

// times formats t1 and t2 for the progress log; a bare cluster has no t2.
func (r roundResult) times() string {
	if r.t2 == 0 {
		return "t1 " + secs(r.t1)
	}
	return fmt.Sprintf("t1 %s, t2 %s", secs(r.t1), secs(r.t2))
}

// scrape reads the API server's write counters. A failure is reported
// and leaves them empty; it does not fail the run.
func (p *phase) scrape(ctx context.Context) apiWrites {
	w, err := scrapeWrites(ctx, p.rc)
	if err != nil {
		logf("%s: %v", p.label, err)
	}
	return w
}

// goals are a round's goals: t1, t2, and every Deployment available.
// On a bare cluster final is applied, and avail is nil.
type goals struct{ applied, final, avail *goal }

// expectGoals registers the goals of a round over the parents named all.
// t1 is every status written; t2 is, for Loom, every parent Ready and, for
// the baseline, every Deployment available.
func (p *phase) expectGoals(sw *stopwatch, all []string) goals {
	var g goals
	mark := func(name string) func(time.Time) { return func(time.Time) { sw.mark(name) } }
	g.applied = p.parents.expect("status written", all, statusWritten, mark("t1"))
	if p.opts.bare {
		g.final = g.applied
		return g
	}
	if p.loom != nil {
		g.final = p.parents.expect("Ready=True", all, ready, mark("t2"))
		g.avail = p.deploys.expect("Deployment available", all, available, nil)
		return g
	}
	g.avail = p.deploys.expect("Deployment available", all, available, mark("t2"))
	g.final = g.avail
	return g
}

// startBaseline starts the baseline's workers, in a base phase, on the
// channel it returns; the creator sends each parent it creates there.
// done receives the workers' error when the channel is closed and drained.
func (p *phase) startBaseline(ctx context.Context, n int, fail context.CancelCauseFunc) (chan *unstructured.Unstructured, chan error) {
	done := make(chan error, 1)
	if p.base == nil {
		return nil, done
	}
	in := make(chan *unstructured.Unstructured, n)
	go func() {
		err := p.base.run(ctx, in, p.opts.workers)
		if err != nil {
			fail(err)
		}
		done <- err
	}()
	return in, done
}

// result assembles what a round measured.
func (p *phase) result(sw *stopwatch, n int, g goals, parents []*unstructured.Unstructured, created []time.Time, createdAt time.Time) roundResult {
	r := roundResult{n: n, t1: sw.since(g.applied.doneAt), created: sw.since(createdAt)}
	if !p.opts.bare {
		r.t2, r.avail = sw.since(g.final.doneAt), sw.since(g.avail.doneAt)
	}
	if p.base != nil {
		p.base.mu.Lock()
		r.lastWrite = sw.since(p.base.lastWrite)
		p.base.mu.Unlock()
	}
	sw.mu.Lock()
	r.at = sw.at
	sw.mu.Unlock()
	for i, pa := range parents {
		r.lat1 = append(r.lat1, p.parents.passedAt(g.applied, pa.GetName()).Sub(created[i]))
		if !p.opts.bare {
			r.lat2 = append(r.lat2, passedAt(p, g.final, pa.GetName()).Sub(created[i]))
		}
	}
	return r
}

// passedAt reads a goal of either tracker.
func passedAt(p *phase, g *goal, name string) time.Time {
	if p.loom != nil {
		return p.parents.passedAt(g, name)
	}
	return p.deploys.passedAt(g, name)
}
