package webhook

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The results of a review, the result label of
// loom_conversion_reviews_total.
const (
	// resultSuccess: every object converted.
	resultSuccess = "success"
	// resultFailure: read, and answered with result Failure.
	resultFailure = "failure"
	// resultRefused: not read (too large, not JSON, not v1): answered
	// with an HTTP error.
	resultRefused = "refused"
)

// Metrics are the conversion webhook's Prometheus metrics.
type Metrics struct {
	reviews  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// serving answers loom_conversion_webhook_serving (SetServing).
	serving atomic.Pointer[func() bool]
	// kinds answers loom_conversion_kinds (SetKinds).
	kinds atomic.Pointer[func() int]
}

// NewMetrics returns the Metrics, registered on reg (nil: none). Their
// series exist from the start, at 0, so that an alert sees the first
// failure.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_conversion_reviews_total",
			Help: "ConversionReviews answered, by parent kind and result (success; failure: answered with result Failure; refused: not read, answered with an HTTP error, kind empty).",
		}, []string{"kind", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "loom_conversion_review_duration_seconds", Help: "Time to convert the objects of one ConversionReview, by parent kind.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"kind"}),
	}
	serving := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "loom_conversion_webhook_serving", Help: "1 while the conversion webhook listens with a serving certificate valid now, 0 otherwise.",
	}, func() float64 {
		if f := m.serving.Load(); f != nil && (*f)() {
			return 1
		}
		return 0
	})
	kinds := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "loom_conversion_kinds", Help: "Parent kinds whose conversions this replica serves: the template sets of several versions it loaded.",
	}, func() float64 {
		if f := m.kinds.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	for _, r := range []string{resultSuccess, resultFailure, resultRefused} {
		m.reviews.WithLabelValues("", r).Add(0)
	}
	if reg != nil {
		reg.MustRegister(m.reviews, m.duration, serving, kinds)
	}
	return m
}

// observe counts one review of kind ("" when unknown) with result, and its
// duration when it was read.
func (m *Metrics) observe(kind, result string, d time.Duration) {
	if m == nil {
		return
	}
	m.reviews.WithLabelValues(kind, result).Inc()
	if result != resultRefused {
		m.duration.WithLabelValues(kind).Observe(d.Seconds())
	}
}

// SetServing makes loom_conversion_webhook_serving read f: true while the
// server listens with a serving certificate valid now.
func (m *Metrics) SetServing(f func() bool) {
	if m != nil {
		m.serving.Store(&f)
	}
}

// SetKinds makes loom_conversion_kinds read f: how many parent kinds the
// webhook converts.
func (m *Metrics) SetKinds(f func() int) {
	if m != nil {
		m.kinds.Store(&f)
	}
}
