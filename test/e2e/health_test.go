//go:build e2e

package e2e

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-operator/loom/test/env"
)

// wedgingTransport holds the requests that wedge accepts until release is
// closed, whatever their context says: a worker stuck in a call that
// ignores its deadline (a deadlock, say), which the reconcile timeout
// cannot free.
type wedgingTransport struct {
	next    http.RoundTripper
	wedge   func(*http.Request) bool
	release chan struct{}
}

func (w *wedgingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if w.wedge(r) {
		<-w.release
		return nil, errors.New("released by the test")
	}
	return w.next.RoundTrip(r)
}

// A Loom whose only worker is stuck in a call that ignores the reconcile
// timeout, with another parent queued behind it, is ready but not live:
// /healthz fails, and the kubelet restarts it. Before the wedge, once its
// cache has synced, it is both.
func TestWedgedWorkerFailsLiveness(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	release := make(chan struct{})
	l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{
		workers:          1,
		reconcileTimeout: time.Second,
		transport: func(rt http.RoundTripper) http.RoundTripper {
			return &wedgingTransport{next: rt, release: release, wedge: func(r *http.Request) bool {
				return r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/namespaces/"+ns+"/services/hello")
			}}
		},
	})
	t.Cleanup(func() { close(release) }) // runs before startLoom's, which waits for the worker
	eventually(t, 30*time.Second, "Loom is ready", func(context.Context) error { return l.mgr.Ready() })
	if err := l.mgr.Live(time.Now()); err != nil {
		t.Fatalf("Live() = %v before any work, want nil", err)
	}
	createParentFixture(t, ns, "minimal") // hello: its Service apply never returns
	createParentFixture(t, ns, "full")    // web: queued behind it
	// The bound is twice the reconcile timeout, 2s.
	eventually(t, 30*time.Second, "Loom is not live", func(context.Context) error {
		err := l.mgr.Live(time.Now())
		if err == nil {
			return errors.New("Live() = nil")
		}
		if want := "the workers of MyResource.example.loom.dev have made no progress for "; !strings.HasPrefix(err.Error(), want) ||
			!strings.Contains(err.Error(), "with 1 parents queued (the bound is 2s)") {
			t.Fatalf("Live() = %v, want %q… with 1 parent queued", err, want)
		}
		return nil
	})
	if err := l.mgr.Ready(); err != nil {
		t.Errorf("Ready() = %v while wedged, want nil (readiness is not liveness)", err)
	}
}
