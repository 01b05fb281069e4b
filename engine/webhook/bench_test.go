package webhook

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/render"
)

// BenchmarkConversionReview100 times one ConversionReview of 100 parents
// from v1alpha1 to v1 through the Handler (HTTP, no TLS), with the set's
// converter (a rename), and reports its p50 and p99.
func BenchmarkConversionReview100(b *testing.B) {
	set, err := render.LoadFS(fstest.MapFS{config.File: {Data: []byte(webVersions)}, "cm.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")}}, "web")
	if err != nil {
		b.Fatal(err)
	}
	reg := NewRegistry()
	reg.Set(schema.GroupKind{Group: "example.com", Kind: "WebApp"}, SetConverter(set))
	h := Handler(Options{Registry: reg})
	objects := make([]string, 100)
	for i := range objects {
		objects[i] = strings.Replace(parent("v1alpha1", fmt.Sprintf("web-%d", i), int64(i)), `"spec":{`, `"spec":{"image":"registry.example.com/team/web:1.2.3","port":8080,"config":{"LOG_LEVEL":"info","MODE":"prod"},`, 1)
	}
	body := []byte(review("example.com/v1", objects...))
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
		durations = append(durations, time.Since(start))
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"status":"Success"`)) {
			b.Fatalf("review failed: %d %s", rec.Code, rec.Body.String()[:200])
		}
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds()), "p99-µs")
}
