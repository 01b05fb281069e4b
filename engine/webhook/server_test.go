package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// fakeConverter renames spec.size (v1alpha1) to spec.replicas (v1) and
// back. A parent named bad fails, one named panic panics, one named slow
// waits until release is closed.
type fakeConverter struct{ release chan struct{} }

func (f fakeConverter) Convert(obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error) {
	switch obj.GetName() {
	case "bad":
		return nil, errors.New("conversion/v1.tmpl:3: executing: nil pointer")
	case "panic":
		panic("boom")
	case "slow":
		<-f.release
	}
	out := obj.DeepCopy()
	from, fromPath, toPath := obj.GroupVersionKind().Version, "size", "replicas"
	if to == "v1alpha1" {
		fromPath, toPath = toPath, fromPath
	}
	if from != to {
		if v, ok, _ := unstructured.NestedFieldCopy(obj.Object, "spec", fromPath); ok {
			unstructured.RemoveNestedField(out.Object, "spec", fromPath)
			_ = unstructured.SetNestedField(out.Object, v, "spec", toPath)
		}
	}
	out.SetAPIVersion("example.com/" + to)
	return out, nil
}

// parent returns a WebApp of version v named name, as JSON.
func parent(v, name string, size int64) string {
	field := "replicas"
	if v == "v1alpha1" {
		field = "size"
	}
	return fmt.Sprintf(`{"apiVersion":"example.com/%s","kind":"WebApp","metadata":{"name":%q,"namespace":"ns"},"spec":{%q:%d}}`, v, name, field, size)
}

// review returns a ConversionReview v1 of objects to desired.
func review(desired string, objects ...string) string {
	return fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u-1","desiredAPIVersion":%q,"objects":[%s]}}`,
		desired, strings.Join(objects, ","))
}

func TestHandler(t *testing.T) {
	tests := []struct {
		name   string
		method string
		body   string
		// code is the HTTP status; for 200, want is the response as YAML.
		code int
		want string
		// errHas is in the HTTP error's body, or the Failure's message.
		errHas string
		// result is the reviews counter's label bumped.
		kind, result string
	}{{
		name: "success, both ways in one review",
		body: review("example.com/v1", parent("v1alpha1", "a", 2), parent("v1", "b", 3)),
		code: 200, kind: "WebApp", result: "success",
		want: `
uid: u-1
result: {status: Success, metadata: {}}
convertedObjects:
- {apiVersion: example.com/v1, kind: WebApp, metadata: {name: a, namespace: ns}, spec: {replicas: 2}}
- {apiVersion: example.com/v1, kind: WebApp, metadata: {name: b, namespace: ns}, spec: {replicas: 3}}
`,
	}, {
		name: "success, down",
		body: review("example.com/v1alpha1", parent("v1", "a", 2)),
		code: 200, kind: "WebApp", result: "success",
		want: `
uid: u-1
result: {status: Success, metadata: {}}
convertedObjects:
- {apiVersion: example.com/v1alpha1, kind: WebApp, metadata: {name: a, namespace: ns}, spec: {size: 2}}
`,
	}, {
		name: "unknown kind",
		body: review("example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":"Database","metadata":{"name":"d"}}`),
		code: 200, result: "failure", errHas: "no converter for Database.example.com",
	}, {
		name: "a failed object fails the review, with no object",
		body: review("example.com/v1", parent("v1alpha1", "a", 2), parent("v1alpha1", "bad", 1)),
		code: 200, kind: "WebApp", result: "failure",
		errHas: "convert WebApp ns/bad to v1: conversion/v1.tmpl:3: executing: nil pointer",
	}, {
		name: "a panic is a failure",
		body: review("example.com/v1", parent("v1alpha1", "panic", 1)),
		code: 200, kind: "WebApp", result: "failure", errHas: "the converter panicked: boom",
	}, {
		name: "deadline",
		body: review("example.com/v1", parent("v1alpha1", "slow", 1)),
		code: 200, result: "failure", errHas: "conversion to example.com/v1 did not finish within 50ms",
	}, {
		name: "another group",
		body: review("other.com/v1", parent("v1alpha1", "a", 1)),
		code: 200, result: "failure", errHas: "cannot convert to other.com/v1, another group",
	}, {
		name: "too large",
		body: review("example.com/v1", parent("v1alpha1", strings.Repeat("a", 5000), 1)),
		code: 413, result: "refused", errHas: "larger than 4096 bytes",
	}, {
		name: "bad JSON",
		body: `{"apiVersion":`,
		code: 400, result: "refused", errHas: "decode the ConversionReview",
	}, {
		name: "wrong apiVersion of the review",
		body: strings.Replace(review("example.com/v1", parent("v1alpha1", "a", 1)), "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", 1),
		code: 400, result: "refused", errHas: "a apiextensions.k8s.io/v1beta1 ConversionReview is not served",
	}, {
		name: "no request",
		body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`,
		code: 400, result: "refused", errHas: "has no request",
	}, {
		name:   "not a POST",
		method: http.MethodGet,
		code:   405,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			reg := NewRegistry()
			reg.Set(schema.GroupKind{Group: "example.com", Kind: "WebApp"}, fakeConverter{release: release})
			m := NewMetrics(prometheus.NewRegistry())
			srv := httptest.NewServer(Handler(Options{Registry: reg, Timeout: 50 * time.Millisecond, MaxBody: 4096, Metrics: m}))
			defer srv.Close()
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, srv.URL+Path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.code, body.String())
			}
			if tt.result != "" {
				if got := testutil.ToFloat64(m.reviews.WithLabelValues(tt.kind, tt.result)); got != 1 {
					t.Errorf("loom_conversion_reviews_total{kind=%q,result=%q} = %v, want 1", tt.kind, tt.result, got)
				}
			}
			if tt.code != 200 {
				if !strings.Contains(body.String(), tt.errHas) {
					t.Errorf("body %q does not say %q", body.String(), tt.errHas)
				}
				return
			}
			var got apiextv1.ConversionReview
			if err := json.Unmarshal(body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.APIVersion != "apiextensions.k8s.io/v1" || got.Kind != "ConversionReview" || got.Response == nil {
				t.Fatalf("not a ConversionReview v1 response: %s", body.String())
			}
			if tt.errHas != "" {
				r := got.Response
				if r.UID != "u-1" || r.Result.Status != "Failure" || len(r.ConvertedObjects) != 0 || !strings.Contains(r.Result.Message, tt.errHas) {
					t.Errorf("response %s: want uid u-1, a Failure saying %q, no object", body.String(), tt.errHas)
				}
				return
			}
			var want apiextv1.ConversionResponse
			if err := yaml.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(asJSON(t, want), asJSON(t, got.Response)); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

// asJSON is v as JSON values, to compare raw objects by value.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRegistry(t *testing.T) {
	reg := NewRegistry()
	web, db := schema.GroupKind{Group: "example.com", Kind: "WebApp"}, schema.GroupKind{Group: "example.com", Kind: "Database"}
	reg.Set(web, fakeConverter{})
	reg.Set(db, fakeConverter{})
	if diff := cmp.Diff([]schema.GroupKind{db, web}, reg.Kinds()); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	reg.Delete(web)
	if reg.Get(web) != nil || reg.Get(db) == nil {
		t.Errorf("after Delete(WebApp): WebApp %v, Database %v; want only Database", reg.Get(web), reg.Get(db))
	}
}
