package main

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// client-go's metrics of every API request Loom sends, under the names
// the Kubernetes components use (rest_client_*), so that dashboards and
// alerts on API requests by code work as they are.

// clientAdapters are the vectors behind client-go's metrics. client-go
// takes the first adapters a process registers, so they are made once per
// process and registered on each registry that asks (a test's, run's).
var clientAdapters = sync.OnceValue(func() clientVectors {
	v := clientVectors{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rest_client_requests_total",
			Help: "Number of HTTP requests to the API server, partitioned by status code, method, and host."},
			[]string{"code", "method", "host"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_request_duration_seconds",
			Help:    "Request latency in seconds, by verb and host.",
			Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}}, []string{"verb", "host"}),
		rateLimiter: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_rate_limiter_duration_seconds",
			Help:    "Client-side rate limiter latency in seconds, by verb and host.",
			Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}}, []string{"verb", "host"}),
	}
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestResult:      requestResult{v.requests},
		RequestLatency:     latency{v.latency},
		RateLimiterLatency: latency{v.rateLimiter},
	})
	return v
})

type clientVectors struct {
	requests             *prometheus.CounterVec
	latency, rateLimiter *prometheus.HistogramVec
}

// registerClientMetrics makes client-go report every request on reg.
func registerClientMetrics(reg prometheus.Registerer) {
	v := clientAdapters()
	reg.MustRegister(v.requests, v.latency, v.rateLimiter)
}

// requestResult is client-go's ResultMetric over a counter.
type requestResult struct{ c *prometheus.CounterVec }

func (r requestResult) Increment(_ context.Context, code, method, host string) {
	r.c.WithLabelValues(code, method, host).Inc()
}

// latency is client-go's LatencyMetric over a histogram; the URL's path is
// left out, as Kubernetes does, to bound the series.
type latency struct{ h *prometheus.HistogramVec }

func (l latency) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	l.h.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}
