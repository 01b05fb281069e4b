package testutil

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics are the metric families of one scrape of a Prometheus text
// endpoint (Loom's /metrics, the API server's), by name.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics parses the Prometheus text format.
func ParseMetrics(r io.Reader) (Metrics, error) {
	// The zero TextParser panics since prometheus/common v0.66: a parser
	// needs its name validation scheme.
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return Metrics(mfs), nil
}

// Each calls fn with the labels and the value of every sample of the
// counter, gauge or untyped metric name.
func (m Metrics) Each(name string, fn func(labels map[string]string, value float64)) {
	mf := m[name]
	if mf == nil {
		return
	}
	for _, s := range mf.GetMetric() {
		labels := make(map[string]string, len(s.GetLabel()))
		for _, lp := range s.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		fn(labels, s.GetCounter().GetValue()+s.GetGauge().GetValue()+s.GetUntyped().GetValue())
	}
}

// Sum adds the values of name's samples whose labels have every value in
// match.
func (m Metrics) Sum(name string, match map[string]string) float64 {
	var sum float64
	m.Each(name, func(labels map[string]string, v float64) {
		for k, want := range match {
			if labels[k] != want {
				return
			}
		}
		sum += v
	})
	return sum
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// HTTPGet returns the body of a GET of url, or an error if the status is
// not 200.
func HTTPGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// ScrapeMetrics reads and parses a Prometheus endpoint over HTTP.
func ScrapeMetrics(ctx context.Context, url string) (Metrics, error) {
	body, err := HTTPGet(ctx, url)
	if err != nil {
		return nil, err
	}
	return ParseMetrics(strings.NewReader(body))
}
