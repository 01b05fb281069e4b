package main

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// prober answers the health probes; the controller's Manager is one.
type prober interface {
	// Ready says why Loom cannot reconcile yet, or nil.
	Ready() error
	// Live says why Loom's workers are wedged at now, or nil.
	Live(now time.Time) error
}

// metricsMux serves /metrics, and the probes: /readyz answers 503 with
// the reason while p is not ready, /healthz answers 503 with the reason
// while p's workers are wedged (a restart is the cure), and both answer
// 200 "ok" otherwise. A replica waiting to lead (standby true) answers 200
// to both: it reconciles nothing, and a rolling update must be able to
// start it while the old leader still holds the Lease. But every replica,
// a standby too, answers /readyz 503 while webhook says why it cannot
// serve the conversion webhook: the webhook's Service then sends the API
// server's conversions to the replicas that can.
func metricsMux(reg *prometheus.Registry, p prober, standby func() bool, webhook func() error) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/readyz", probe(p.Ready, standby, webhook))
	mux.HandleFunc("/healthz", probe(func() error { return p.Live(time.Now()) }, standby, nil))
	return mux
}

// probe answers with first's verdict, then (unless the replica is a
// standby) check's.
func probe(check func() error, standby func() bool, first func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if first != nil {
			if err := first(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		if standby() {
			_, _ = w.Write([]byte("ok: waiting to lead"))
			return
		}
		if err := check(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}
}
