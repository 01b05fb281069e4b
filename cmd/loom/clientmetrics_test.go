package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A request client-go sends is counted by code and method, and timed by
// verb, on the registry registerClientMetrics was given.
func TestClientMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	registerClientMetrics(reg)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(clientAdapters().requests.WithLabelValues("404", "GET", srv.Listener.Addr().String()))
	_, err = cs.CoreV1().Namespaces().Get(context.Background(), "nope", metav1.GetOptions{})
	if err == nil {
		t.Fatal("the Get succeeded; want NotFound")
	}
	after := testutil.ToFloat64(clientAdapters().requests.WithLabelValues("404", "GET", srv.Listener.Addr().String()))
	if after-before != 1 {
		t.Errorf("rest_client_requests_total{code=404,method=GET} grew by %v, want 1", after-before)
	}
	if n := testutil.CollectAndCount(reg, "rest_client_request_duration_seconds"); n < 1 {
		t.Errorf("%d rest_client_request_duration_seconds series, want at least 1", n)
	}
}
