package transport

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

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
	client := &http.Client{Transport: &ResponseDeadline{Next: srv.Client().Transport, D: d}}

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
