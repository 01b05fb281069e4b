package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
)

func TestChooseRateLimit(t *testing.T) {
	apfOn := func() (bool, error) { return true, nil }
	apfOff := func() (bool, error) { return false, nil }
	down := func() (bool, error) { return false, errors.New("connection refused") }
	unasked := func() (bool, error) {
		t.Error("asked the API server although the flag set the limit")
		return false, nil
	}
	tests := []struct {
		name      string
		qps       float32
		burst     int
		apf       func() (bool, error)
		wantQPS   float32
		wantBurst int
	}{
		{"default, server has APF: no client-side limit", 0, 0, apfOn, -1, -1},
		{"default, server without APF: fallback", 0, 0, apfOff, fallbackQPS, fallbackBurst},
		{"default, server cannot be asked: fallback", 0, 0, down, fallbackQPS, fallbackBurst},
		{"explicit QPS wins over APF", 50, 0, unasked, 50, 100},
		{"explicit QPS and burst", 50, 70, unasked, 50, 70},
		{"negative QPS disables", -1, 0, unasked, -1, -1},
		{"tiny QPS keeps a burst of 1", 0.1, 0, unasked, 0.1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chooseRateLimit(tt.qps, tt.burst, tt.apf)
			if got.qps != tt.wantQPS || got.burst != tt.wantBurst {
				t.Errorf("chooseRateLimit = QPS %v burst %d, want %v %d", got.qps, got.burst, tt.wantQPS, tt.wantBurst)
			}
			if got.why == "" {
				t.Error("no reason given for the log")
			}
		})
	}
}

// The API server says it has APF by naming the matched FlowSchema in a
// response header.
func TestAPFEnabled(t *testing.T) {
	for _, header := range []bool{true, false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/livez/ping" {
				t.Errorf("asked %s, want /livez/ping", r.URL.Path)
			}
			if header {
				w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, "7f3c")
			}
			_, _ = w.Write([]byte("ok"))
		}))
		got, err := apfEnabled(t.Context(), &rest.Config{Host: srv.URL})
		srv.Close()
		if err != nil || got != header {
			t.Errorf("header sent %v: apfEnabled = %v, %v", header, got, err)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	if _, err := apfEnabled(t.Context(), &rest.Config{Host: srv.URL}); err == nil {
		t.Error("a server that is down gave no error")
	}
}
