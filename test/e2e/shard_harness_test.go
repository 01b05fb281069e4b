//go:build e2e

package e2e

// The harness of the sharding tests (shard_test.go): a namespace filled
// with parents of two kinds, replicas of bin/loom run --sharded in a shard
// group of their own, spec churn, and the checks of convergence, balance
// and takeover.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/internal/testutil"
)

// gadgetGVR is the second parent kind of the sharding tests, from the set
// in testdata/shard/gadget.
var gadgetGVR = schema.GroupVersionResource{Group: "shard.e2e.loom.dev", Version: "v1alpha1", Resource: "gadgets"}

const (
	// shardBucketLabel is on every child: the bucket of its parent.
	shardBucketLabel = "loom.dev/shard-bucket"
	// shardTableAnnotation is on the table Lease, <group>-shards.
	shardTableAnnotation = "loom.dev/shard-table"
)

// gadgetCRD installs the Gadget CRD once per test binary. Like the
// shipped MyResource CRD, it stays: the sharding tests run in parallel and
// share it, and each deletes only its namespace.
var gadgetCRD = sync.OnceValue(func() error {
	set, err := render.Load(filepath.Join(repoRoot, "test", "e2e", "testdata", "shard", "gadget"))
	if err != nil {
		return err
	}
	def, err := set.CRD()
	if err != nil {
		return err
	}
	obj, err := crd.Unstructured(def)
	if err != nil {
		return err
	}
	raw, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := applyCRD(ctx, raw); err != nil {
		return fmt.Errorf("apply CRD %s: %w", def.Name, err)
	}
	// Established comes a moment before the kind is served.
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gadgetGVR).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
})

// shardParent is one parent of a sharding test.
type shardParent struct {
	gvr       schema.GroupVersionResource
	name, uid string
}

// shardEnv is one sharding test's namespace, its parents, and the shard
// group (Leases in that namespace) its replicas join.
type shardEnv struct {
	t                    *testing.T
	ns, group, templates string
	// parents are perKind MyResources m-<i> and perKind Gadgets g-<i>.
	parents []shardParent
	// logs is where the replicas' logs go: the test's temporary folder,
	// or $LOOM_E2E_SHARD_LOGS/<test> to keep them.
	logs string
	// next numbers the replicas, r0, r1, ...
	next int
}

// newShardEnv makes a namespace with perKind parents of each kind, and a
// templates folder with both sets.
func newShardEnv(t *testing.T, perKind int) *shardEnv {
	t.Helper()
	if err := gadgetCRD(); err != nil {
		t.Fatalf("install the Gadget CRD: %v", err)
	}
	e := &shardEnv{t: t, ns: newNamespace(t), templates: t.TempDir(), logs: t.TempDir()}
	e.group = "e2e-" + e.ns
	if dir := os.Getenv("LOOM_E2E_SHARD_LOGS"); dir != "" {
		e.logs = filepath.Join(dir, t.Name())
		if err := os.MkdirAll(e.logs, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for src, dst := range map[string]string{
		filepath.Join(repoRoot, "templates", "myresource"):                    filepath.Join(e.templates, "myresource"),
		filepath.Join(repoRoot, "test", "e2e", "testdata", "shard", "gadget"): filepath.Join(e.templates, "gadget"),
	} {
		if err := testutil.CopyDir(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	e.parents = make([]shardParent, 2*perKind)
	err := testutil.ForEach(context.Background(), len(e.parents), 8, func(ctx context.Context, i int) error {
		obj := shardParentObject(i%2 == 1, i/2)
		gvr := myresGVR
		if i%2 == 1 {
			gvr = gadgetGVR
		}
		created, err := dyn.Resource(gvr).Namespace(e.ns).Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create %s %s: %w", gvr.Resource, obj.GetName(), err)
		}
		e.parents[i] = shardParent{gvr: gvr, name: created.GetName(), uid: string(created.GetUID())}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// shardParentObject is MyResource m-<i> (no pods: replicas 0, so it is
// Ready as soon as the Deployment controller has seen it) with a ConfigMap
// entry rev, or Gadget g-<i> with value; churn changes both.
func shardParentObject(gadget bool, i int) *unstructured.Unstructured {
	if gadget {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "shard.e2e.loom.dev/v1alpha1", "kind": "Gadget",
			"metadata": map[string]any{"name": "g-" + strconv.Itoa(i)},
			"spec":     map[string]any{"value": "0"},
		}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1", "kind": "MyResource",
		"metadata": map[string]any{"name": "m-" + strconv.Itoa(i)},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(0), "config": map[string]any{"rev": "0"}},
	}}
}

// patchRev sets the parent's revision: a spec change that changes one of
// its ConfigMaps.
func (e *shardEnv) patchRev(ctx context.Context, p shardParent, rev int) error {
	patch := fmt.Sprintf(`{"spec":{"config":{"rev":"%d"}}}`, rev)
	if p.gvr == gadgetGVR {
		patch = fmt.Sprintf(`{"spec":{"value":"%d"}}`, rev)
	}
	_, err := dyn.Resource(p.gvr).Namespace(e.ns).Patch(ctx, p.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch %s %s: %w", p.gvr.Resource, p.name, err)
	}
	return nil
}

// patchAll changes the spec of each of parents once, from 8 clients.
func (e *shardEnv) patchAll(t *testing.T, parents []shardParent, rev int) {
	t.Helper()
	err := testutil.ForEach(context.Background(), len(parents), 8, func(ctx context.Context, i int) error {
		return e.patchRev(ctx, parents[i], rev)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// churner changes every parent's spec, round after round, until stopped.
type churner struct {
	stopped atomic.Bool
	done    chan struct{}
	started time.Time
	rounds  atomic.Int64
	patches atomic.Int64
	err     atomic.Pointer[error]
}

// churnRate is how many specs a churn changes per second, at most: enough
// that every replica always has work queued, few enough that the
// replicas, not the test's patches, fill the CPUs of a small CI machine
// (and leave the API server time to renew their Leases).
const churnRate = 25

// churn starts changing every parent's spec, round after round, from
// revision 1000 up (the tests' own patches use small revisions).
func (e *shardEnv) churn() *churner {
	c := &churner{done: make(chan struct{}), started: time.Now()}
	limit := flowcontrol.NewTokenBucketRateLimiter(churnRate, 1)
	go func() {
		defer close(c.done)
		defer limit.Stop()
		for rev := 1000; !c.stopped.Load(); rev++ {
			err := testutil.ForEach(context.Background(), len(e.parents), 4, func(ctx context.Context, i int) error {
				limit.Accept()
				if c.stopped.Load() {
					return nil
				}
				if err := e.patchRev(ctx, e.parents[i], rev); err != nil {
					return err
				}
				c.patches.Add(1)
				return nil
			})
			if err != nil {
				c.err.Store(&err)
				return
			}
			if !c.stopped.Load() {
				c.rounds.Add(1)
			}
		}
	}()
	return c
}

// waitPatches waits until the churn has changed n specs, so that it is
// under way.
func (c *churner) waitPatches(t *testing.T, n int64) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("%d spec changes", n), func(context.Context) error {
		if err := c.err.Load(); err != nil {
			return *err
		}
		if got := c.patches.Load(); got < n {
			return fmt.Errorf("%d spec changes", got)
		}
		return nil
	})
}

// runFor lets the churn run until d after it started, and for at least
// rounds rounds: the time is how long the load lasts, the rounds that
// every parent changed that often.
func (c *churner) runFor(t *testing.T, d time.Duration, rounds int64) {
	t.Helper()
	eventually(t, d+3*time.Minute, fmt.Sprintf("%s and %d rounds of churn", d, rounds), func(context.Context) error {
		if err := c.err.Load(); err != nil {
			return *err
		}
		if got := c.rounds.Load(); got < rounds || time.Since(c.started) < d {
			return fmt.Errorf("%d rounds in %s", got, time.Since(c.started).Round(time.Second))
		}
		return nil
	})
}

// stop ends the churn and fails the test if a patch failed.
func (c *churner) stop(t *testing.T) {
	t.Helper()
	c.stopped.Store(true)
	<-c.done
	if err := c.err.Load(); err != nil {
		t.Fatalf("churn: %v", *err)
	}
	t.Logf("churn: %d spec changes (%d full rounds) in %s", c.patches.Load(), c.rounds.Load(), time.Since(c.started).Round(100*time.Millisecond))
}

// shardReplica is one bin/loom run --sharded process.
type shardReplica struct {
	*testutil.Process
	name, addr string
}

// start runs a replica of the group, with extra flags.
func (e *shardEnv) start(extra ...string) *shardReplica {
	t := e.t
	t.Helper()
	r := &shardReplica{name: "r" + strconv.Itoa(e.next), addr: freeAddr(t)}
	e.next++
	args := append([]string{"run", "--templates", e.templates, "--namespace", e.ns, "--kubeconfig", kubeconfigPath(),
		"--metrics-bind-address", r.addr, "--log-format", "json", "-v=2",
		"--sharded", "--shard-namespace", e.ns, "--shard-group", e.group, "--shard-id-prefix", r.name}, extra...)
	r.Process = testutil.StartProcess(t, filepath.Join(e.logs, r.name+".log"), filepath.Join(repoRoot, "bin", "loom"), args...)
	return r
}

// startN runs n replicas.
func (e *shardEnv) startN(n int, extra ...string) []*shardReplica {
	e.t.Helper()
	rs := make([]*shardReplica, n)
	for i := range rs {
		rs[i] = e.start(extra...)
	}
	return rs
}

// log parses what the replica logged so far.
func (r *shardReplica) log(t *testing.T) shardLog {
	t.Helper()
	l, err := parseShardLog(r.name, strings.NewReader(r.Output()))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// memberID is the ID the replica last joined the group with.
func (r *shardReplica) memberID(t *testing.T) string {
	t.Helper()
	var id string
	eventually(t, 30*time.Second, r.name+" joins the shard group", func(context.Context) error {
		if id = r.log(t).lastID(); id == "" {
			return errNotYet
		}
		return nil
	})
	return id
}

// signal sends sig to the replica's process.
func (r *shardReplica) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(r.Pid(), sig); err != nil {
		t.Fatalf("%s to %s (pid %d): %v", sig, r.name, r.Pid(), err)
	}
}

// metrics scrapes the replica's /metrics.
func (r *shardReplica) metrics(ctx context.Context) (testutil.Metrics, error) {
	if done, err := r.Exited(); done {
		return nil, fmt.Errorf("%s exited (%v):\n%s", r.name, err, r.Tail(20))
	}
	m, err := testutil.ScrapeMetrics(ctx, "http://"+r.addr+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	return m, nil
}

// table reads the group's shard table.
func (e *shardEnv) table(ctx context.Context) (map[string]bucketSet, error) {
	lease, err := kube.CoordinationV1().Leases(e.ns).Get(ctx, e.group+"-shards", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return parseShardTable(lease.Annotations[shardTableAnnotation])
}

// waitBalanced waits until the table has exactly the members of rs and
// every bucket, each member holding 64/n buckets (or one more), and each
// replica's metrics say so.
func (e *shardEnv) waitBalanced(t *testing.T, timeout time.Duration, rs ...*shardReplica) map[string]bucketSet {
	t.Helper()
	lo := shardBucketCount / len(rs)
	hi := lo
	if shardBucketCount%len(rs) != 0 {
		hi++
	}
	var table map[string]bucketSet
	testutil.Poll(t, 250*time.Millisecond, timeout, fmt.Sprintf("%d replicas hold %d or %d buckets each", len(rs), lo, hi), func(ctx context.Context) error {
		ids := map[string]*shardReplica{}
		for _, r := range rs {
			ids[r.log(t).lastID()] = r
		}
		var err error
		if table, err = e.table(ctx); err != nil {
			return err
		}
		var all bucketSet
		for id, set := range table {
			r := ids[id]
			if r == nil {
				return fmt.Errorf("table %v: member %s is none of the replicas %v", table, id, keys(ids))
			}
			if set.len() < lo || set.len() > hi {
				return fmt.Errorf("table %v: %s holds %d buckets", table, id, set.len())
			}
			m, err := r.metrics(ctx)
			if err != nil {
				return err
			}
			if got := m.Sum("loom_shard_buckets", nil); got != float64(set.len()) {
				return fmt.Errorf("%s: loom_shard_buckets %v, the table says %d", r.name, got, set.len())
			}
			if got := m.Sum("loom_shard_members", nil); got != float64(len(rs)) {
				return fmt.Errorf("%s: loom_shard_members %v, want %d", r.name, got, len(rs))
			}
			all |= set
		}
		if len(table) != len(rs) || all.len() != shardBucketCount {
			return fmt.Errorf("table %v: want %d members holding all %d buckets", table, len(rs), shardBucketCount)
		}
		return nil
	})
	return table
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// waitOwnedByAll waits until each replica caches only its own parents and
// together they cache every parent once: their loom_parents add up to the
// number of parents, and each holds buckets.
func (e *shardEnv) waitOwnedByAll(t *testing.T, rs ...*shardReplica) {
	t.Helper()
	eventually(t, 30*time.Second, "the replicas' loom_parents add up to the parents", func(ctx context.Context) error {
		var sum float64
		var each []string
		for _, r := range rs {
			m, err := r.metrics(ctx)
			if err != nil {
				return err
			}
			n, buckets := m.Sum("loom_parents", nil), m.Sum("loom_shard_buckets", nil)
			if buckets <= 0 {
				return fmt.Errorf("%s holds no bucket", r.name)
			}
			sum += n
			each = append(each, fmt.Sprintf("%s: %v parents in %v buckets", r.name, n, buckets))
		}
		if sum != float64(len(e.parents)) {
			return fmt.Errorf("loom_parents add up to %v, want %d (%s)", sum, len(e.parents), strings.Join(each, "; "))
		}
		t.Logf("owned: %s", strings.Join(each, "; "))
		return nil
	})
}

// waitConverged waits until every parent is Ready with a status of its
// current generation, and its children exist, controlled by it, labelled
// with its bucket, and with its current revision.
func (e *shardEnv) waitConverged(t *testing.T, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	testutil.Poll(t, time.Second, timeout, fmt.Sprintf("%d parents converge", len(e.parents)), e.converged)
	t.Logf("%d parents converged in %s", len(e.parents), time.Since(start).Round(100*time.Millisecond))
}

// childWant is a child a parent must have: its name and, for a ConfigMap,
// the data key that holds the parent's revision.
type childWant struct {
	gvr     schema.GroupVersionResource
	name    string
	dataKey string
}

func (e *shardEnv) converged(ctx context.Context) error {
	children := map[schema.GroupVersionResource]map[string]*unstructured.Unstructured{}
	for _, gvr := range []schema.GroupVersionResource{configMapGVR, deployGVR, serviceGVR} {
		list, err := dyn.Resource(gvr).Namespace(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=loom"})
		if err != nil {
			return err
		}
		children[gvr] = map[string]*unstructured.Unstructured{}
		for i := range list.Items {
			children[gvr][list.Items[i].GetName()] = &list.Items[i]
		}
	}
	var problems []string
	n := 0
	for _, gvr := range []schema.GroupVersionResource{myresGVR, gadgetGVR} {
		list, err := dyn.Resource(gvr).Namespace(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range list.Items {
			p := &list.Items[i]
			n++
			if why := parentProblem(p, children); why != "" {
				problems = append(problems, why)
			}
		}
	}
	if n != len(e.parents) {
		return fmt.Errorf("%d parents, want %d", n, len(e.parents))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d of %d parents not converged, e.g. %s", len(problems), n, strings.Join(problems[:min(5, len(problems))], "; "))
	}
	return nil
}

// parentProblem says what keeps p from having converged, or "".
func parentProblem(p *unstructured.Unstructured, children map[schema.GroupVersionResource]map[string]*unstructured.Unstructured) string {
	observed, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
	if st, reason, msg := testutil.Condition(p, "Ready"); st != "True" || observed != p.GetGeneration() {
		return fmt.Sprintf("%s: Ready=%q %s %.100q, observedGeneration %d of %d", p.GetName(), st, reason, msg, observed, p.GetGeneration())
	}
	var rev string
	var wants []childWant
	if p.GetKind() == "Gadget" {
		rev, _, _ = unstructured.NestedString(p.Object, "spec", "value")
		wants = []childWant{{configMapGVR, p.GetName() + "-gadget", "value"}}
	} else {
		rev, _, _ = unstructured.NestedString(p.Object, "spec", "config", "rev")
		wants = []childWant{{configMapGVR, p.GetName() + "-config", "rev"}, {deployGVR, p.GetName(), ""}, {serviceGVR, p.GetName(), ""}}
	}
	bucket := strconv.Itoa(bucketOf(string(p.GetUID())))
	for _, w := range wants {
		c := children[w.gvr][w.name]
		if c == nil {
			return fmt.Sprintf("%s: no %s %s", p.GetName(), w.gvr.Resource, w.name)
		}
		if ref := metav1.GetControllerOfNoCopy(c); ref == nil || ref.UID != p.GetUID() {
			return fmt.Sprintf("%s: %s %s is not controlled by it", p.GetName(), w.gvr.Resource, w.name)
		}
		if got := c.GetLabels()[shardBucketLabel]; got != bucket {
			return fmt.Sprintf("%s: %s %s has %s=%q, want %s", p.GetName(), w.gvr.Resource, w.name, shardBucketLabel, got, bucket)
		}
		if w.dataKey == "" {
			continue
		}
		if got, _, _ := unstructured.NestedString(c.Object, "data", w.dataKey); got != rev {
			return fmt.Sprintf("%s: %s %s has %s=%q, the spec %q", p.GetName(), w.gvr.Resource, w.name, w.dataKey, got, rev)
		}
	}
	return ""
}

// logsOf parses the logs of rs.
func logsOf(t *testing.T, rs ...*shardReplica) []shardLog {
	t.Helper()
	out := make([]shardLog, len(rs))
	for i, r := range rs {
		out[i] = r.log(t)
	}
	return out
}

// checkNoTwoWriters fails the test if two processes logged reconciles of
// one parent that shared a moment, unless one of them ran into a lapse of
// its replica's Lease (see excusedByLapse; those it returns), or if a
// replica sent a write for a parent it did not own (writeProblems). It
// also fails if an interval names a member ID its process never joined
// with, or if some parent was never reconciled; and it logs the lapses,
// which a replica that keeps running only has when the API server is too
// slow to renew its Lease in time.
func (e *shardEnv) checkNoTwoWriters(t *testing.T, logs []shardLog) (excused []overlap) {
	t.Helper()
	var ivs []reconcileInterval
	seen := map[string]bool{}
	byProc := map[string]shardLog{}
	writes := 0
	for _, l := range logs {
		byProc[l.proc] = l
		writes += len(l.writes)
		joined := map[string]bool{}
		for _, j := range l.joins {
			joined[j.id] = true
		}
		for _, iv := range l.intervals {
			if !joined[iv.replica] {
				t.Errorf("%s logged a reconcile as member %s, but joined only as %v", l.proc, iv.replica, keys(joined))
			}
			seen[iv.uid] = true
			ivs = append(ivs, iv)
		}
		for _, at := range l.lapses {
			t.Logf("%s's shard Lease lapsed at %s; it joined %d times", l.proc, at.Format(time.RFC3339Nano), len(l.joins))
		}
	}
	for _, p := range e.parents {
		if !seen[p.uid] {
			t.Errorf("no replica logged a reconcile of %s %s (%s)", p.gvr.Resource, p.name, p.uid)
		}
	}
	var bad []string
	for _, o := range overlaps(ivs) {
		if excusedByLapse(o.a, byProc[o.a.proc]) || excusedByLapse(o.b, byProc[o.b.proc]) {
			excused = append(excused, o)
			continue
		}
		bad = append(bad, o.String())
	}
	if len(bad) > 0 {
		t.Errorf("%d pairs of reconciles of one parent by two replicas at once, e.g.:\n%s", len(bad), strings.Join(bad[:min(10, len(bad))], "\n"))
	}
	if p := writeProblems(logs); len(p) > 0 {
		t.Errorf("%d writes for parents the replica did not own, e.g.:\n%s", len(p), strings.Join(p[:min(10, len(p))], "\n"))
	}
	t.Logf("checked %d reconcile intervals of %d parents for overlaps (%d excused: in flight when their replica's Lease lapsed) and %d writes for ownership",
		len(ivs), len(seen), len(excused), writes)
	return excused
}

// parentsIn returns the parents whose bucket is in set.
func (e *shardEnv) parentsIn(set bucketSet) []shardParent {
	var out []shardParent
	for _, p := range e.parents {
		if set.has(bucketOf(p.uid)) {
			out = append(out, p)
		}
	}
	return out
}

// waitTakeover waits until, for every one of parents, one of rs logged a
// reconcile of it that started after since, and returns the earliest such
// start of each.
func waitTakeover(t *testing.T, timeout time.Duration, since time.Time, parents []shardParent, rs ...*shardReplica) map[string]time.Time {
	t.Helper()
	first := map[string]time.Time{}
	testutil.Poll(t, 250*time.Millisecond, timeout, fmt.Sprintf("the other replicas reconcile the %d parents", len(parents)), func(context.Context) error {
		clear(first)
		for _, l := range logsOf(t, rs...) {
			for _, iv := range l.intervals {
				if iv.start.After(since) && (first[iv.uid].IsZero() || iv.start.Before(first[iv.uid])) {
					first[iv.uid] = iv.start
				}
			}
		}
		var missing []string
		for _, p := range parents {
			if first[p.uid].IsZero() {
				missing = append(missing, p.name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d not yet, e.g. %v", len(missing), missing[:min(5, len(missing))])
		}
		return nil
	})
	return first
}

// latest is the latest of the times in m for parents, and the parent's name.
func latest(m map[string]time.Time, parents []shardParent) (time.Time, string) {
	var at time.Time
	var name string
	for _, p := range parents {
		if t := m[p.uid]; t.After(at) {
			at, name = t, p.name
		}
	}
	return at, name
}
