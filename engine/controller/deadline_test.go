package controller

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

// A request whose response never begins fails once the deadline passes,
// naming the request; a response that has begun is not cut, however long
// its body lasts (a watch's lasts minutes).
func TestResponseDeadline(t *testing.T) {
	const d = 100 * time.Millisecond
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/never" {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		_, _ = io.WriteString(w, "first ")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
			_, _ = io.WriteString(w, "second")
		}
	}))
	defer srv.Close()
	client := &http.Client{Transport: &responseDeadline{next: srv.Client().Transport, d: d}}

	resp, err := client.Get(srv.URL + "/never")
	if err == nil {
		resp.Body.Close()
		t.Fatal("a request the server never answered succeeded")
	}
	if want := "GET /never: no response within 100ms"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}

	resp, err = client.Get(srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len("first "))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	// The body stays open for three deadlines before its end is sent: a
	// deadline that cut it would have done so by then.
	time.Sleep(3 * d)
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if got := string(first) + string(rest); err != nil || got != "first second" {
		t.Errorf("body = %q, %v; want %q", got, err, "first second")
	}
}
