package main

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// requestCounter counts the requests one writer (the baseline or Loom)
// sends, by what they are.
type requestCounter struct {
	children, status, events, reads, watches atomic.Int64
}

// requests is a snapshot of a requestCounter.
type requests struct {
	// Children are writes to anything but a status or an Event: applies
	// and prunes of children.
	Children int64
	// Status are writes to a status subresource.
	Status int64
	// Events are writes of Events.
	Events int64
	// Reads are GETs and LISTs; Watches are the watch requests among them.
	Reads, Watches int64
}

func (c *requestCounter) snapshot() requests {
	return requests{
		Children: c.children.Load(), Status: c.status.Load(), Events: c.events.Load(),
		Reads: c.reads.Load(), Watches: c.watches.Load(),
	}
}

// Writes is every write request.
func (r requests) Writes() int64 { return r.Children + r.Status + r.Events }

// sub returns the requests sent between snapshot b and r.
func (r requests) sub(b requests) requests {
	return requests{
		Children: r.Children - b.Children, Status: r.Status - b.Status, Events: r.Events - b.Events,
		Reads: r.Reads - b.Reads, Watches: r.Watches - b.Watches,
	}
}

// count sorts one request. Paths look like
// /apis/apps/v1/namespaces/ns/deployments/web or
// /apis/example.loom.dev/v1alpha1/namespaces/ns/myresources/p-0001/status.
func (c *requestCounter) count(r *http.Request) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		c.reads.Add(1)
		if r.URL.Query().Get("watch") == "true" {
			c.watches.Add(1)
		}
		return
	}
	switch p := r.URL.Path; {
	case strings.Contains(p, "/events"):
		c.events.Add(1)
	case strings.HasSuffix(p, "/status"):
		c.status.Add(1)
	default:
		c.children.Add(1)
	}
}

// countingTransport counts each request before sending it.
type countingTransport struct {
	next http.RoundTripper
	n    *requestCounter
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.count(r)
	return t.next.RoundTrip(r)
}
