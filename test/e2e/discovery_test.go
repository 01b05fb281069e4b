//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

// gadgetWidgetSet writes a template set whose parent kind, Widget, and one of
// whose child kinds, Gadget, are of group, which has no CRDs yet; the
// other child is a ConfigMap. It returns the templates folder.
func gadgetWidgetSet(t *testing.T, group string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "widget"), map[string]string{
		"loom.yaml": "parent:\n  apiVersion: " + group + "/v1\n  kind: Widget\n",
		"configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-cm
data:
  size: {{ .Spec.size | default "small" | quote }}
`,
		"gadget.yaml": `apiVersion: ` + group + `/v1
kind: Gadget
metadata:
  name: {{ .Name }}-gadget
spec:
  color: blue
`,
	})
	return dir
}

// Loom converges whatever the order in which it starts and the CRDs of a
// set's parent and child kinds become established: here both CRDs are
// installed while Loom starts (its controller's first discovery, the CRD
// informer's list and the CRDs being established race), with no pause
// anywhere, and a parent is created as soon as its kind is served.
func TestCRDsInstalledWhileLoomStarts(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	group := fmt.Sprintf("e2e%d.loom.dev", rand.Uint32())
	dir := gadgetWidgetSet(t, group)
	t.Cleanup(func() {
		deleteTestCRD(e, group, "widgets")
		deleteTestCRD(e, group, "gadgets")
	})
	installed := make(chan error, 1)
	go func() {
		err := e.ApplyCRD(context.Background(), testCRD(group, "Widget", "widgets"))
		if err == nil {
			err = e.ApplyCRD(context.Background(), testCRD(group, "Gadget", "gadgets"))
		}
		installed <- err
	}()
	startLoom(t, dir, ns, loomOptions{})
	if err := <-installed; err != nil {
		t.Fatalf("install CRDs of %s: %v", group, err)
	}

	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	gadgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	createObject(t, widgets, ns, `{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":"large"}}`)
	eventually(t, 60*time.Second, "the Widget's ConfigMap and Gadget are applied", func(ctx context.Context) error {
		if _, err := e.Get(ctx, configMapGVR, ns, "w1-cm"); err != nil {
			return err
		}
		_, err := e.Get(ctx, gadgets, ns, "w1-gadget")
		return err
	})
	waitConditionGVR(t, widgets, ns, "w1", "Degraded", "False")
}

// holdFirst holds the first request that match accepts until release is
// closed, and closes arrived when that request arrives.
type holdFirst struct {
	next             http.RoundTripper
	match            func(*http.Request) bool
	once             sync.Once
	arrived, release chan struct{}
}

func (h *holdFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	first := false
	if h.match(r) {
		h.once.Do(func() { first = true })
	}
	if first {
		close(h.arrived)
		select {
		case <-h.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return h.next.RoundTrip(r)
}

// A CRD established after a controller asked discovery for its kind, and
// before Loom's CRD informer listed CRDs, comes to that informer as part
// of its list, before it has synced: Loom still starts the controller.
// The test forces the order by holding Loom's first list of CRDs until the
// CRD is established.
func TestCRDEstablishedBeforeLoomListsCRDs(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	group := fmt.Sprintf("e2e%d.loom.dev", rand.Uint32())
	hold := &holdFirst{arrived: make(chan struct{}), release: make(chan struct{}), match: func(r *http.Request) bool {
		return r.Method == http.MethodGet && r.URL.Path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	}}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(hold.release) }) }
	l := startLoom(t, gadgetWidgetSet(t, group), ns, loomOptions{bufferLogs: true, transport: func(rt http.RoundTripper) http.RoundTripper {
		hold.next = rt
		return hold
	}})
	t.Cleanup(release) // runs before Loom is stopped
	select {
	case <-hold.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("Loom did not list CRDs within 30s")
	}
	eventually(t, 30*time.Second, "the Widget controller finds its kind not served", func(context.Context) error {
		if !strings.Contains(l.logs(), "Parent kind is not served yet; waiting for its CRD") {
			return errNotYet
		}
		return nil
	})
	installTestCRD(t, group, "Widget", "widgets")
	installTestCRD(t, group, "Gadget", "gadgets")
	release()

	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	createObject(t, widgets, ns, `{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":"large"}}`)
	eventually(t, 30*time.Second, "the Widget controller starts and applies the ConfigMap", func(ctx context.Context) error {
		_, err := e.Get(ctx, configMapGVR, ns, "w1-cm")
		return err
	})
	waitConditionGVR(t, widgets, ns, "w1", "Degraded", "False")
}

// staleDiscovery answers Loom's discovery requests (GET /api and /apis)
// from the last answer it let through while stale is set, the way an API
// server that has not yet seen a new CRD answers. It counts the stale
// answers to GET /apis: one per refresh of discovery.
type staleDiscovery struct {
	next  http.RoundTripper
	stale atomic.Bool
	told  atomic.Int32
	mu    sync.Mutex
	last  map[string]recorded // by path and Accept
}

type recorded struct {
	status int
	header http.Header
	body   []byte
}

func (d *staleDiscovery) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet || (r.URL.Path != "/api" && r.URL.Path != "/apis") {
		return d.next.RoundTrip(r)
	}
	key := r.URL.Path + " " + r.Header.Get("Accept")
	d.mu.Lock()
	rec, ok := d.last[key]
	d.mu.Unlock()
	if ok && d.stale.Load() {
		if r.URL.Path == "/apis" {
			d.told.Add(1)
		}
		return &http.Response{StatusCode: rec.status, Header: rec.header.Clone(), Request: r,
			Body: io.NopCloser(bytes.NewReader(rec.body)), ContentLength: int64(len(rec.body))}, nil
	}
	resp, err := d.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	d.mu.Lock()
	d.last[key] = recorded{status: resp.StatusCode, header: resp.Header.Clone(), body: body}
	d.mu.Unlock()
	return resp, nil
}

// A parent whose child kind is not served waits for it, its condition and
// a Warning Event naming the kind, and converges once the kind is served,
// even when the API server that answers Loom's discovery publishes the
// kind later than the CRD's event reaches Loom (the test answers discovery
// from before the CRD until Loom has refreshed it three times after the CRD
// was established: more than the CRD's own events cause).
func TestChildKindPublishedAfterItsCRDEvent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	group := fmt.Sprintf("e2e%d.loom.dev", rand.Uint32())
	installTestCRD(t, group, "Widget", "widgets")
	disco := &staleDiscovery{last: map[string]recorded{}}
	startLoom(t, gadgetWidgetSet(t, group), ns, loomOptions{admin: crdJustCreated, transport: func(rt http.RoundTripper) http.RoundTripper {
		disco.next = rt
		return disco
	}})
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	createObject(t, widgets, ns, `{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"w1"}}`)
	waitDegraded(t, widgets, ns, "w1", "ApplyFailed", "Gadget", "not served")
	waitEvent(t, ns, "w1", "Warning", "ApplyFailed", "Gadget", "not served")

	disco.stale.Store(true)
	installTestCRD(t, group, "Gadget", "gadgets")
	told := disco.told.Load()
	eventually(t, 30*time.Second, "Loom refreshes discovery three times after the Gadget CRD is established", func(context.Context) error {
		if disco.told.Load() < told+3 {
			return errNotYet
		}
		return nil
	})
	disco.stale.Store(false)

	gadgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	eventually(t, 30*time.Second, "the Gadget is applied once its kind is served", func(ctx context.Context) error {
		_, err := e.Get(ctx, gadgets, ns, "w1-gadget")
		return err
	})
	waitConditionGVR(t, widgets, ns, "w1", "Degraded", "False")
}
