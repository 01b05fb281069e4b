//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/controller"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/rbac"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

var (
	myresGVR     = schema.GroupVersionResource{Group: "example.loom.dev", Version: "v1alpha1", Resource: "myresources"}
	deployGVR    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	serviceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	crdGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// loom is one in-process Loom controller under test.
type loom struct {
	templates string
	// mgr is the Manager, for its health (Ready, Live).
	mgr      *controller.Manager
	registry *prometheus.Registry
	writes   *writeCounter
	cancel   context.CancelFunc
	done     chan error
	// logs returns what Loom logged so far, with loomOptions.bufferLogs.
	logs func() string
}

type loomOptions struct {
	resync  time.Duration
	workers int
	// impersonate runs Loom as this user, e.g. a service account.
	impersonate string
	// hang, when it returns true for a request, holds that request until
	// its context ends, like an API server that never answers.
	hang func(*http.Request) bool
	// reconcileTimeout is Options.ReconcileTimeout.
	reconcileTimeout time.Duration
	// transport, when set, wraps Loom's HTTP transport, to watch or hold
	// the requests it sends.
	transport func(http.RoundTripper) http.RoundTripper
	// quiet logs only Loom's per-parent decisions (V(2)) instead of its
	// per-item chatter (V(4)), for tests that run many Looms at once.
	quiet bool
	// bufferLogs keeps Loom's log in memory too, for loom.logs.
	bufferLogs bool
	// installCRDs is Options.InstallCRDs (loom run --install-crds).
	installCRDs bool
	// admin runs Loom with the test's admin credentials. Without it (and
	// without impersonate or token) Loom runs as a user bound to exactly
	// what `loom rbac` generates for the sets in templates at start, so
	// that every e2e set converges with the generated rules; a test whose
	// sets change kinds later, or that tests something else, opts out.
	admin bool
	// loomNamespace is Options.LoomNamespace (loom run
	// --loom-namespace): its Secrets register workload clusters.
	loomNamespace string
	// converter is Options.Converter: a set's converter between its
	// parent's versions (nil: the set's own).
	converter func(*render.Set) pipeline.Converter
	// token, when set, is the bearer token Loom authenticates with (a
	// ServiceAccount's, from the TokenRequest API) instead of the admin's:
	// unlike impersonate, it lets Loom impersonate in turn.
	token string
}

// startLoom runs a controller over templates, watching only namespace, and
// stops it (waiting for it to drain) when the test ends.
func startLoom(t *testing.T, templates, namespace string, o loomOptions) *loom {
	t.Helper()
	e := env.From(t)
	l := &loom{templates: templates, registry: prometheus.NewRegistry(), writes: &writeCounter{}, done: make(chan error, 1)}
	c := rest.CopyConfig(e.Config)
	if o.impersonate == "" && o.token == "" && !o.admin {
		o.impersonate = generatedUserFor(t, templates, rbac.Options{Namespace: namespace, InstallCRDs: o.installCRDs, LoomNamespace: o.loomNamespace})
	}
	c.Impersonate.UserName = o.impersonate
	if o.token != "" {
		c.BearerToken, c.BearerTokenFile = o.token, ""
		c.CertData, c.KeyData, c.CertFile, c.KeyFile = nil, nil, "", ""
	}
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: rt, n: l.writes, hang: o.hang}
	})
	if o.transport != nil {
		c.Wrap(o.transport)
	}
	mgr, err := controller.New(controller.Options{
		Config: c, TemplatesDir: templates, Namespace: namespace, Workers: o.workers,
		ResyncPeriod: o.resync, Registry: l.registry, ReloadDebounce: 50 * time.Millisecond,
		ReconcileTimeout: o.reconcileTimeout, InstallCRDs: o.installCRDs, LoomNamespace: o.loomNamespace,
		Converter: o.converter,
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	verbosity := 4
	if o.quiet {
		verbosity = 2
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(verbosity), ktesting.BufferLogs(o.bufferLogs)))
	l.logs = func() string {
		if u, ok := logger.GetSink().(ktesting.Underlier); ok {
			return u.GetBuffer().String()
		}
		return ""
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	l.cancel = cancel
	l.mgr = mgr
	go func() { l.done <- mgr.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-l.done:
			if err != nil {
				t.Errorf("loom run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("loom did not stop within 30s of cancellation")
		}
	})
	return l
}

// mustBeRunning fails the test if the Manager's Run has returned: Loom
// stopped (or crashed and recovered into an error) while it should be
// reconciling.
func (l *loom) mustBeRunning(t *testing.T) {
	t.Helper()
	select {
	case err := <-l.done:
		l.done <- err // for the cleanup, which waits for it
		t.Fatalf("Loom's Run returned while it should be running: %v", err)
	default:
	}
}

// quiesce waits until Loom has gone quiet: count (of reconciles, say) does
// not move for a whole quiet period, so the last child status updates after
// Ready have been handled.
func quiesce(t *testing.T, quiet time.Duration, count func() float64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last := count()
	for time.Now().Before(deadline) {
		time.Sleep(quiet)
		n := count()
		if n == last {
			return
		}
		last = n
	}
	t.Fatalf("Loom did not go quiet for %s within 60s", quiet)
}

// counter sums a counter (or gauge) metric over all its label values that
// match.
func (l *loom) counter(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	mfs, err := l.registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := match[lp.GetName()]; ok && want != lp.GetValue() {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// writeCounter counts the write requests a Loom sends.
type writeCounter struct {
	mu    sync.Mutex
	total atomic.Int64
	log   []string
}

func (w *writeCounter) reset() {
	w.mu.Lock()
	w.total.Store(0)
	w.log = nil
	w.mu.Unlock()
}

func (w *writeCounter) snapshot() (int64, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total.Load(), append([]string(nil), w.log...)
}

type countingTransport struct {
	next http.RoundTripper
	n    *writeCounter
	hang func(*http.Request) bool
}

// RoundTrip counts a write request when it is sent, and logs it with the
// API server's answer ("PATCH /api/v1/.../configmaps/x 200"; "error" when
// there was none).
func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	write := false
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		write = true
		c.n.total.Add(1)
	}
	var resp *http.Response
	var err error
	if c.hang != nil && c.hang(r) {
		<-r.Context().Done()
		err = r.Context().Err()
	} else {
		resp, err = c.next.RoundTrip(r)
	}
	if write {
		code := "error"
		if resp != nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		c.n.mu.Lock()
		if len(c.n.log) < 50 {
			c.n.log = append(c.n.log, r.Method+" "+r.URL.Path+" "+code)
		}
		c.n.mu.Unlock()
	}
	return resp, err
}

// copyTemplates copies the shipped template sets into a temporary folder
// that a test may edit.
func copyTemplates(t *testing.T) string {
	t.Helper()
	e := env.From(t)
	dst := t.TempDir()
	if err := testutil.CopyDir(filepath.Join(e.Root, "templates"), dst); err != nil {
		t.Fatalf("copy templates: %v", err)
	}
	return dst
}

// patchSpec merge-patches a MyResource.
func patchSpec(t *testing.T, ns, name, patch string) {
	t.Helper()
	patchObject(t, myresGVR, ns, name, patch)
}

// patchObject merge-patches any namespaced object.
func patchObject(t *testing.T, gvr schema.GroupVersionResource, ns, name, patch string) {
	t.Helper()
	e := env.From(t)
	if _, err := e.Dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}

// editFile rewrites a file by replacing old with new, failing if old is absent.
var editFile = testutil.EditFile

// createParent creates a MyResource from YAML in namespace.
func createParent(t *testing.T, namespace, manifest string) *unstructured.Unstructured {
	t.Helper()
	e := env.From(t)
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("parse parent: %v", err)
	}
	created, err := e.Dyn.Resource(myresGVR).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create parent: %v", err)
	}
	return created
}

// createParentFixture creates the MyResource of testdata/parents/<name>.yaml
// (full: every field of the shipped set; minimal: only the image) in
// namespace.
func createParentFixture(t *testing.T, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	return createParent(t, namespace, env.Fixture(t, "parents/"+name+".yaml"))
}

// createParentAs creates the MyResource of testdata/parents/<fixture>.yaml
// in namespace, under the name name.
func createParentAs(t *testing.T, namespace, fixture, name string) *unstructured.Unstructured {
	t.Helper()
	e := env.From(t)
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(env.Fixture(t, "parents/"+fixture+".yaml")), &obj.Object); err != nil {
		t.Fatalf("parse parent: %v", err)
	}
	obj.SetName(name)
	created, err := e.Dyn.Resource(myresGVR).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create parent: %v", err)
	}
	return created
}

// eventually polls cond until it returns nil, failing with its last error
// after timeout.
var eventually = testutil.Eventually

var consistently = testutil.Consistently

// condition returns the status, reason and message of a parent's condition.
var condition = testutil.Condition

var errNotYet = errors.New("not yet")

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// createObject creates an object from JSON.
func createObject(t *testing.T, gvr schema.GroupVersionResource, namespace, manifest string) *unstructured.Unstructured {
	t.Helper()
	e := env.From(t)
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("parse object: %v", err)
	}
	created, err := e.Dyn.Resource(gvr).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", gvr.Resource, err)
	}
	return created
}

// waitCondition waits until a MyResource's condition has the given status.
func waitCondition(t *testing.T, ns, name, typ, want string) {
	t.Helper()
	waitConditionGVR(t, myresGVR, ns, name, typ, want)
}

// waitDegraded waits until the object is Degraded for reason, with a
// message that holds every one of texts.
func waitDegraded(t *testing.T, gvr schema.GroupVersionResource, ns, name, reason string, texts ...string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 30*time.Second, name+" is Degraded ("+reason+")", func(ctx context.Context) error {
		p, err := e.Get(ctx, gvr, ns, name)
		if err != nil {
			return err
		}
		st, got, msg := condition(p, "Degraded")
		if st != "True" || got != reason || !containsAll(msg, texts) {
			return fmt.Errorf("Degraded=%s reason=%s message=%.300q, want %s with %q", st, got, msg, reason, texts)
		}
		return nil
	})
}

// waitEvent waits for an Event of type and reason on the object name whose
// message holds every one of texts.
func waitEvent(t *testing.T, ns, name, typ, reason string, texts ...string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 30*time.Second, "a "+typ+" "+reason+" Event on "+name, func(ctx context.Context) error {
		evs, err := e.Events(ctx, ns, name)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if e.Type == typ && e.Reason == reason && containsAll(e.Message, texts) {
				return nil
			}
		}
		return fmt.Errorf("none among %d events (want a message with %q)", len(evs), texts)
	})
}

func containsAll(s string, texts []string) bool {
	for _, x := range texts {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

func waitConditionGVR(t *testing.T, gvr schema.GroupVersionResource, ns, name, typ, want string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 60*time.Second, name+" "+typ+"="+want, func(ctx context.Context) error {
		p, err := e.Get(ctx, gvr, ns, name)
		if err != nil {
			return err
		}
		if st, reason, msg := condition(p, typ); st != want {
			return fmt.Errorf("%s=%q (%s: %s)", typ, st, reason, msg)
		}
		return nil
	})
}
