package controller

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Discovery, which a controller's start and every reconcile go through to
// resolve a kind, has a deadline: against an API server that never
// answers, resolving a kind fails after ReconcileTimeout instead of
// holding the start (and the mapper's lock, which every reconcile takes)
// for good.
func TestDiscoveryHasADeadline(t *testing.T) {
	held := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-held:
		}
	}))
	defer srv.Close()
	defer close(held) // before srv.Close, which waits for the handlers
	timeout := 200 * time.Millisecond
	m, err := New(Options{Config: &rest.Config{Host: srv.URL}, ReconcileTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := m.applier.Resource(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
		done <- err
	}()
	// Discovery asks for /api and /apis, each retried by client-go: a
	// bound far above its deadline, and far below forever.
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("resolved a kind against a server that never answers")
		}
	case <-time.After(50 * timeout):
		t.Fatalf("resolving a kind did not end within %s of a server that never answers", 50*timeout)
	}
}
