package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/loom-operator/loom/engine/controller"
)

// errNoCert is a conversion webhook's readiness error.
var errNoCert = errors.New("the conversion webhook has no valid serving certificate")

// fakeProber answers the probes with fixed errors.
type fakeProber struct{ ready, live error }

func (p fakeProber) Ready() error         { return p.ready }
func (p fakeProber) Live(time.Time) error { return p.live }

// TestHealthHandlers checks that /readyz and /healthz say what the Manager
// says: 503 with the reason when it is not ready or its workers are
// wedged, 200 otherwise. A replica waiting to lead is ready and live: it
// has nothing to reconcile, and a rolling update must be able to start it
// while the old leader holds the Lease.
func TestHealthHandlers(t *testing.T) {
	type answer struct {
		Code int
		Body string
	}
	notSynced := errors.New("the controller of MyResource.example.loom.dev has not started: its parent cache has not synced yet")
	wedged := errors.New("the workers of MyResource.example.loom.dev have made no progress for 1m1s with 3 parents queued (the bound is 1m0s)")
	tests := []struct {
		name         string
		prober       prober
		standby      bool
		webhook      error
		ready, alive answer
	}{
		{"ready and live", fakeProber{}, false, nil, answer{200, "ok"}, answer{200, "ok"}},
		{"not synced", fakeProber{ready: notSynced}, false, nil, answer{503, notSynced.Error() + "\n"}, answer{200, "ok"}},
		{"wedged", fakeProber{live: wedged}, false, nil, answer{200, "ok"}, answer{503, wedged.Error() + "\n"}},
		{"waiting to lead", fakeProber{ready: notSynced, live: wedged}, true, nil,
			answer{200, "ok: waiting to lead"}, answer{200, "ok: waiting to lead"}},
		// The Service sends conversions to ready pods only: a replica
		// that cannot serve them is not ready, leader or standby.
		{"webhook down", fakeProber{}, false, errNoCert, answer{503, errNoCert.Error() + "\n"}, answer{200, "ok"}},
		{"webhook down, waiting to lead", fakeProber{}, true, errNoCert, answer{503, errNoCert.Error() + "\n"}, answer{200, "ok: waiting to lead"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := metricsMux(prometheus.NewRegistry(), tt.prober, func() bool { return tt.standby }, func() error { return tt.webhook })
			for path, want := range map[string]answer{"/readyz": tt.ready, "/healthz": tt.alive} {
				rec := httptest.NewRecorder()
				mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if diff := cmp.Diff(want, answer{rec.Code, rec.Body.String()}); diff != "" {
					t.Errorf("%s (-want +got):\n%s", path, diff)
				}
			}
		})
	}
}

// TestReadyzBeforeTheManagerRuns checks /readyz with the real Manager: it
// is not ready before Run has loaded the template sets.
func TestReadyzBeforeTheManagerRuns(t *testing.T) {
	mgr, err := controller.New(controller.Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}, TemplatesDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	mux := metricsMux(prometheus.NewRegistry(), mgr, func() bool { return false }, func() error { return nil })
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != "the template sets are not loaded yet\n" {
		t.Errorf("/readyz = %d %q, want 503 saying the sets are not loaded", rec.Code, rec.Body.String())
	}
}
