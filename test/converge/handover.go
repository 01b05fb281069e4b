package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/shard"
)

// The flags of loom run a takeover reads from -loom-args, and their
// defaults.
const (
	shardGroupFlag     = "shard-group"
	shardPrefixFlag    = "shard-id-prefix"
	shardLeaseFlag     = "shard-lease-duration"
	defaultShardGroup  = "loom"
	defaultShardLease  = 6 * time.Second
	shardTableSuffix   = "-shards"
	shardTableAnnot    = "loom.dev/shard-table"
	handoverSlack      = 5 * time.Second
	handoverTimeLimit  = 2 * time.Minute
	handoverLogPattern = "loom-%d-after-%s.log"
)

var leaseGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// takeover is one handover of a sharded phase: one replica stopped by a
// signal while the parents it held were edited, and the others took them
// over; then the replica started again and the buckets rebalanced.
type takeover struct {
	signal string
	// replica is the replica stopped, from 1; buckets how many it held;
	// moved the parents in them, of which edited were edited (at most
	// -handover-edits, spread over them).
	replica, buckets, moved, edited int
	// target is the bound on took: 5 s after a SIGTERM, the Lease
	// duration plus 5 s after a SIGKILL.
	target time.Duration
	// From the signal: sent, the last edit returned; exited, the process
	// ended; took, the last edited parent's Deployment carried the edit
	// (as the harness's informer saw it). complete is false if they did
	// not all within handoverTimeLimit; landed says how many did.
	sent, exited, took time.Duration
	// released and claimed are from the signal until the table named the
	// replica for none of its buckets, and until other members held all
	// of them (0 if not seen within the time limit).
	released, claimed time.Duration
	complete          bool
	landed            int
	// writes are the API server's writes to the children and the
	// parents' status from the signal until -settle after took.
	writes requests
	// rejoin is from the replica's restart until the replicas were
	// balanced again; rejoinWrites the writes to the children and the
	// parents' status from the restart until -settle after that.
	rejoin       time.Duration
	rejoinWrites requests
	rejoined     bool
	// applied and rejoinApplied are the same windows' child applies that
	// wrote (created or configured), from the replicas' own counters
	// (loom_child_changes_total): those of the replicas that kept
	// running, and after the rejoin of the restarted one too. Unlike the
	// API server's, they count no other client.
	applied, rejoinApplied float64
}

// extra are the child writes the API server saw beyond one Deployment
// write per edited parent: writes for children that were already right,
// or someone else's on a shared cluster.
func (t takeover) extra() int64 { return t.writes.Children - int64(t.edited) }

// extraApplied are Loom's own child applies that wrote beyond one per
// edited parent: the writes per takeover for children already right.
func (t takeover) extraApplied() float64 { return t.applied - float64(t.edited) }

// met says whether the edits all landed within the target.
func (t takeover) met() bool { return t.complete && t.took <= t.target }

// replicaPrefix is the --shard-id-prefix the harness gives replica i (from
// 0) of a sharded phase, so that it can tell from the table which buckets
// each one holds: converge-1, converge-2, ...
func replicaPrefix(i int) string { return fmt.Sprintf("converge-%d", i+1) }

// handoverTarget is the bound a takeover is held to: 5 s from a SIGTERM;
// the Lease duration plus 5 s from a SIGKILL (the others wait that long
// before they take a silent replica's buckets).
func handoverTarget(sig syscall.Signal, lease time.Duration) time.Duration {
	if sig == syscall.SIGKILL {
		return lease + handoverSlack
	}
	return handoverSlack
}

// shardLease is the replicas' --shard-lease-duration, from -loom-args or
// loom run's default.
func shardLease(args []string) (time.Duration, error) {
	v, given := flagValue(args, shardLeaseFlag)
	if !given {
		return defaultShardLease, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("-loom-args --%s: %w", shardLeaseFlag, err)
	}
	return d, nil
}

// heldBy returns the buckets the table gives to members whose ID starts
// with prefix and a dash (IDs are the prefix and a random suffix).
func heldBy(t shard.Table, prefix string) shard.Set {
	var s shard.Set
	for b, id := range t {
		if strings.HasPrefix(id, prefix+"-") && !strings.Contains(id[len(prefix)+1:], "-") {
			s = s.Add(b)
		}
	}
	return s
}

// parentRef is a parent's name and UID.
type parentRef struct {
	name string
	uid  types.UID
}

// movedParents returns the names of the parents in held's buckets, and at
// most limit of them (0: all) spread evenly over them for the edit.
func movedParents(parents []parentRef, held shard.Set, limit int) (moved int, edit []string) {
	var in []string
	for _, p := range parents {
		if held.Has(shard.Bucket(p.uid)) {
			in = append(in, p.name)
		}
	}
	if limit <= 0 || len(in) <= limit {
		return len(in), in
	}
	edit = make([]string, limit)
	for i := range edit {
		edit[i] = in[i*len(in)/limit]
	}
	return len(in), edit
}

// takeovers measures, on a converged sharded phase, a SIGTERM takeover
// and then a SIGKILL one of its first replica, each followed by the
// replica's restart and the rebalance. It measures nothing (nil) unless
// the phase runs sharded replicas in their own processes and
// -handover is on.
func (p *phase) takeovers(ctx context.Context) ([]takeover, error) {
	g, ok := p.loom.(*loomGroup)
	if !ok || !p.spec.sharded || !p.opts.handover || len(g.procs) < 2 {
		return nil, nil
	}
	lease, err := shardLease(p.opts.loomArgs)
	if err != nil {
		return nil, err
	}
	deploys := p.deploys
	if deploys == nil { // a bare cluster: the phase tracks no Deployments
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		deploys = newTracker(p.client, deploymentGVR, p.namespace)
		if err := deploys.start(tctx); err != nil {
			return nil, err
		}
	}
	var out []takeover
	for k, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t, err := p.takeover(ctx, g, 0, sig, handoverTarget(sig, lease), deploys, p.opts.replicas+1+int64(k))
		out = append(out, t)
		if err != nil {
			return out, fmt.Errorf("%s takeover: %w", t.signal, err)
		}
		logf("%s: %s", p.label, t.summary())
	}
	return out, nil
}

// takeover stops replica i with sig, edits the parents it held (their
// spec.replicas to replicas) at once, and waits until their Deployments
// carry the edit; then it starts the replica again and waits until the
// buckets are balanced.
func (p *phase) takeover(ctx context.Context, g *loomGroup, i int, sig syscall.Signal, target time.Duration,
	deploys *tracker, replicas int64) (takeover, error) {
	t := takeover{signal: sigName(sig), replica: i + 1, target: target}
	held, err := p.heldBy(ctx, replicaPrefix(i))
	if err != nil {
		return t, err
	}
	t.buckets = held.Len()
	var parents []parentRef
	for _, obj := range p.parents.inf.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			parents = append(parents, parentRef{name: u.GetName(), uid: u.GetUID()})
		}
	}
	var edit []string
	t.moved, edit = movedParents(parents, held, p.opts.handoverEdits)
	t.edited = len(edit)
	if t.edited == 0 {
		return t, fmt.Errorf("replica %d holds buckets %s, with no parent in them", i+1, held)
	}
	goal := deploys.expect(t.signal+" handover", edit, replicasAre(replicas), nil)
	before, err := scrapeWrites(ctx, p.rc)
	if err != nil {
		return t, err
	}
	loomBefore, err := g.each(ctx)
	if err != nil {
		return t, err
	}

	// 1. The signal, and at once the edits of every parent it held.
	tctx, stopTable := context.WithTimeout(ctx, handoverTimeLimit)
	defer stopTable()
	moves, err := p.watchTable(tctx, replicaPrefix(i), held)
	if err != nil {
		return t, err
	}
	l := g.procs[i]
	l.exitExpected.Store(true)
	t0 := time.Now()
	if err := syscall.Kill(l.pid(), sig); err != nil {
		return t, fmt.Errorf("%s replica %d (pid %d): %w", t.signal, i+1, l.pid(), err)
	}
	var exited time.Time
	exitSeen := make(chan struct{})
	go func() {
		<-l.exited()
		exited = time.Now()
		close(exitSeen)
	}()
	if err := p.editReplicas(ctx, edit, replicas); err != nil {
		return t, err
	}
	t.sent = time.Since(t0)

	// 2. Until every edit reached its Deployment, then -settle.
	wctx, cancel := context.WithTimeout(ctx, handoverTimeLimit)
	werr := deploys.wait(wctx, goal)
	cancel()
	t.complete = werr == nil
	t.landed = t.edited - goal.left(deploys)
	if t.complete {
		t.took = goal.doneAt.Sub(t0)
	} else {
		t.took = time.Since(t0)
		logf("%s: %v", p.label, werr)
	}
	if err := sleep(ctx, p.opts.settle); err != nil {
		return t, err
	}
	after, err := scrapeWrites(ctx, p.rc)
	if err != nil {
		return t, err
	}
	t.writes = after.sub(before).writerRequests(p.opts.bare)
	for j, l := range g.procs {
		if j == i {
			continue
		}
		s, err := l.stats(ctx)
		if err != nil {
			return t, err
		}
		t.applied += wrote(s.sub(loomBefore[j]))
	}
	select {
	case <-exitSeen:
	case <-time.After(stopGrace):
		_ = l.proc.Kill()
		<-exitSeen
	}
	t.exited = exited.Sub(t0)
	stopTable()
	m := <-moves
	t.released, t.claimed = since(t0, m.released), since(t0, m.claimed)

	// 3. The replica again, until the buckets are balanced, then -settle.
	return t, p.rejoin(ctx, g, i, &t)
}

// rejoin starts replica i again in place of the one stopped, waits until
// the replicas are balanced and counts the writes meanwhile.
func (p *phase) rejoin(ctx context.Context, g *loomGroup, i int, t *takeover) error {
	before, err := scrapeWrites(ctx, p.rc)
	if err != nil {
		return err
	}
	loomBefore := make([]loomStats, len(g.procs))
	for j, l := range g.procs {
		if j == i {
			continue // stopped; the new one counts from 0
		}
		if loomBefore[j], err = l.stats(ctx); err != nil {
			return err
		}
	}
	start := time.Now()
	log := fmt.Sprintf(handoverLogPattern, i+1, strings.ToLower(t.signal))
	o := p.loomOptions()
	l, err := startLoomProcess(ctx, o, p.loomDir, replicaArgs(o.loomArgs, i, true), shiftPort(o.metricsAddr, i), log)
	if err != nil {
		return fmt.Errorf("restart replica %d: %w", i+1, err)
	}
	g.procs[i] = l
	p.cpu.watch("loom", l.pid())
	p.watchExit(ctx, l, fmt.Sprintf("loom replica %d", i+1))
	if _, err := waitBalanced(ctx, g, p.opts.balanceTimeout); err != nil {
		return err
	}
	t.rejoin, t.rejoined = time.Since(start), true
	if err := sleep(ctx, p.opts.settle); err != nil {
		return err
	}
	after, err := scrapeWrites(ctx, p.rc)
	if err != nil {
		return err
	}
	t.rejoinWrites = after.sub(before).writerRequests(p.opts.bare)
	for j, l := range g.procs {
		s, err := l.stats(ctx)
		if err != nil {
			return err
		}
		t.rejoinApplied += wrote(s.sub(loomBefore[j]))
	}
	return nil
}

// wrote are the child applies of s that wrote: created or configured.
func wrote(s loomStats) float64 { return s.Changes["created"] + s.Changes["configured"] }

// heldBy reads the group's table and returns the buckets of the replica
// whose IDs start with prefix.
func (p *phase) heldBy(ctx context.Context, prefix string) (shard.Set, error) {
	ns, group := p.shardLeases()
	l, err := p.client.Resource(leaseGVR).Namespace(ns).Get(ctx, group+shardTableSuffix, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("read the shard table: %w", err)
	}
	t, err := shard.DecodeTable(l.GetAnnotations()[shardTableAnnot])
	if err != nil {
		return 0, fmt.Errorf("read the shard table %s/%s: %w", ns, l.GetName(), err)
	}
	held := heldBy(t, prefix)
	if held == 0 {
		return 0, fmt.Errorf("the shard table names no member %s-* (-loom-args must not set --%s): %s", prefix, shardPrefixFlag, t.Encode())
	}
	return held, nil
}

// shardLeases are the namespace and the group of the replicas' Leases.
func (p *phase) shardLeases() (namespace, group string) {
	ns, given := flagValue(p.opts.loomArgs, shardNSFlag)
	if !given {
		ns = defaultShardNS
	}
	group, given = flagValue(p.opts.loomArgs, shardGroupFlag)
	if !given {
		group = defaultShardGroup
	}
	return ns, group
}

// editReplicas sets spec.replicas of the named parents, -workers at a
// time, and returns once every patch returned.
func (p *phase) editReplicas(ctx context.Context, names []string, replicas int64) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	jobs := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range p.opts.workers {
		wg.Go(func() {
			for name := range jobs {
				_, err := p.client.Resource(myResourceGVR).Namespace(p.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
				if err != nil {
					errs <- fmt.Errorf("edit MyResource %s/%s: %w", p.namespace, name, err)
				}
			}
		})
	}
	for _, n := range names {
		jobs <- n
	}
	close(jobs)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// replicasAre is the goal of an edit: the Deployment asks for replicas.
func replicasAre(replicas int64) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		n, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		return ok && n == replicas
	}
}

func sigName(sig syscall.Signal) string {
	if sig == syscall.SIGKILL {
		return "SIGKILL"
	}
	return "SIGTERM"
}

// summary is one line of what a takeover measured.
func (t takeover) summary() string {
	s := fmt.Sprintf("%s of replica %d (%d buckets, %d parents, %d edited): edits sent in %s, exit after %s, buckets released after %s and claimed after %s, all landed after %s (target %s)",
		t.signal, t.replica, t.buckets, t.moved, t.edited, secs(t.sent), secs(t.exited), secs(t.released), secs(t.claimed), secs(t.took), secs(t.target))
	if !t.complete {
		s += fmt.Sprintf(", only %d of %d landed", t.landed, t.edited)
	}
	s += fmt.Sprintf("; writes children %d (%+d beyond the edited), status %d; Loom's applies that wrote %.0f", t.writes.Children, t.extra(), t.writes.Status, t.applied)
	if t.rejoined {
		s += fmt.Sprintf("; rejoined in %s with children %d, status %d writes, Loom's applies that wrote %.0f",
			secs(t.rejoin), t.rejoinWrites.Children, t.rejoinWrites.Status, t.rejoinApplied)
	}
	return s
}

// left is how many of the goal's names have not passed.
func (g *goal) left(t *tracker) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(g.pending)
}

// since is t-t0, or 0 for a zero t.
func since(t0, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return t.Sub(t0)
}

// tableMoves are when the table first named the stopped replica for none
// of its buckets, and when other members first held every one of them.
type tableMoves struct{ released, claimed time.Time }

// watchTable watches the group's table until ctx is done, then sends when
// the buckets held moved away from the members with prefix.
func (p *phase) watchTable(ctx context.Context, prefix string, held shard.Set) (<-chan tableMoves, error) {
	ns, group := p.shardLeases()
	w, err := p.client.Resource(leaseGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + group + shardTableSuffix,
	})
	if err != nil {
		return nil, fmt.Errorf("watch the shard table: %w", err)
	}
	out := make(chan tableMoves, 1)
	go func() {
		defer w.Stop()
		var m tableMoves
		defer func() { out <- m }()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				t, err := shard.DecodeTable(u.GetAnnotations()[shardTableAnnot])
				if err != nil {
					continue
				}
				now := time.Now()
				if m.released.IsZero() && heldBy(t, prefix)&held == 0 {
					m.released = now
				}
				if m.claimed.IsZero() && heldBy(t, prefix)&held == 0 && t.Of("")&held == 0 {
					m.claimed = now
				}
			}
		}
	}()
	return out, nil
}
