//go:build e2e

package e2e

// The harness of the sharding tests (shard_test.go): a namespace filled
// with parents of two kinds, spec churn, and the check that every parent
// converged. The replicas and the checks of what they did are in
// shard_replica_test.go, the log they are read from in shardlog_test.go.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	"github.com/loom-operator/loom/test/env"
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

var (
	gadgetCRDOnce sync.Once
	gadgetCRDErr  error
)

// gadgetCRD installs the Gadget CRD once per test binary. Like the
// shipped MyResource CRD, it stays: the sharding tests run in parallel and
// share it, and each deletes only its namespace.
func gadgetCRD(e *env.Env) error {
	gadgetCRDOnce.Do(func() { gadgetCRDErr = installGadgetCRD(e) })
	return gadgetCRDErr
}

func installGadgetCRD(e *env.Env) error {
	set, err := render.Load(filepath.Join(e.Root, "test", "e2e", "testdata", "shard", "gadget"))
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
	if err := e.ApplyCRD(ctx, raw); err != nil {
		return fmt.Errorf("apply CRD %s: %w", def.Name, err)
	}
	// Established comes a moment before the kind is served.
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.Dyn.Resource(gadgetGVR).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}

// shardParent is one parent of a sharding test.
type shardParent struct {
	gvr       schema.GroupVersionResource
	name, uid string
}

// shardEnv is one sharding test's namespace, its parents, and the shard
// group (Leases in that namespace) its replicas join.
type shardEnv struct {
	*env.Env
	t                    *testing.T
	ns, group, templates string
	// parents are perKind MyResources m-<i> and perKind Gadgets g-<i>.
	parents []shardParent
	// logs is where the replicas' logs go: the test's temporary folder,
	// or $LOOM_E2E_SHARD_LOGS/<test> to keep them.
	logs string
	// next numbers the replicas, r0, r1, ...
	next int
	// counters, if not nil, count each replica's requests to the API
	// server, by replica name: its replicas talk through an apiCounter.
	counters map[string]*apiCounter
}

// newShardEnv makes a namespace with perKind parents of each kind, and a
// templates folder with both sets.
func newShardEnv(t *testing.T, perKind int) *shardEnv {
	t.Helper()
	e := &shardEnv{Env: env.From(t), t: t, templates: t.TempDir(), logs: t.TempDir()}
	if err := gadgetCRD(e.Env); err != nil {
		t.Fatalf("install the Gadget CRD: %v", err)
	}
	e.ns = e.NewNamespace(t)
	e.group = "e2e-" + e.ns
	if dir := os.Getenv("LOOM_E2E_SHARD_LOGS"); dir != "" {
		e.logs = filepath.Join(dir, t.Name())
		if err := os.MkdirAll(e.logs, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for src, dst := range map[string]string{
		filepath.Join(e.Root, "templates", "myresource"):                    filepath.Join(e.templates, "myresource"),
		filepath.Join(e.Root, "test", "e2e", "testdata", "shard", "gadget"): filepath.Join(e.templates, "gadget"),
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
		created, err := e.Dyn.Resource(gvr).Namespace(e.ns).Create(ctx, obj, metav1.CreateOptions{})
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
	_, err := e.Dyn.Resource(p.gvr).Namespace(e.ns).Patch(ctx, p.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
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
		list, err := e.Dyn.Resource(gvr).Namespace(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=loom"})
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
		list, err := e.Dyn.Resource(gvr).Namespace(e.ns).List(ctx, metav1.ListOptions{})
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
