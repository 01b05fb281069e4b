package main

import (
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestRequestCounter(t *testing.T) {
	tests := []struct {
		name   string
		method string
		url    string
		want   requests
	}{
		{"child apply", http.MethodPatch, "/apis/apps/v1/namespaces/ns/deployments/p-0001?fieldManager=loom&force=true", requests{Children: 1}},
		{"status apply", http.MethodPatch, "/apis/example.loom.dev/v1alpha1/namespaces/ns/myresources/p-0001/status", requests{Status: 1}},
		{"event", http.MethodPost, "/api/v1/namespaces/ns/events", requests{Events: 1}},
		{"event patch", http.MethodPatch, "/api/v1/namespaces/ns/events/p-0001.18a", requests{Events: 1}},
		{"prune", http.MethodDelete, "/api/v1/namespaces/ns/configmaps/p-0001-config", requests{Children: 1}},
		{"list", http.MethodGet, "/api/v1/namespaces/ns/services?labelSelector=x", requests{Reads: 1}},
		{"watch", http.MethodGet, "/api/v1/namespaces/ns/services?watch=true", requests{Reads: 1, Watches: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			c := &requestCounter{}
			c.count(&http.Request{Method: tt.method, URL: u})
			if diff := cmp.Diff(tt.want, c.snapshot()); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGoalTests(t *testing.T) {
	tests := []struct {
		name                string
		manifest            string
		wantWritten, wantOK bool
	}{
		{"no status", `
metadata: {name: p, generation: 1}`, false, false},
		{"old generation", `
metadata: {name: p, generation: 2}
status:
  observedGeneration: 1
  children: [{kind: ConfigMap}, {kind: Deployment}, {kind: Service}]`, false, false},
		{"two children", `
metadata: {name: p, generation: 1}
status:
  observedGeneration: 1
  children: [{kind: Deployment}, {kind: Service}]`, false, false},
		{"written, not ready", `
metadata: {name: p, generation: 1}
status:
  observedGeneration: 1
  children: [{kind: ConfigMap}, {kind: Deployment}, {kind: Service}]
  conditions: [{type: Ready, status: "False"}]`, true, false},
		{"ready", `
metadata: {name: p, generation: 1}
status:
  observedGeneration: 1
  children: [{kind: ConfigMap}, {kind: Deployment}, {kind: Service}]
  conditions: [{type: Progressing, status: "False"}, {type: Ready, status: "True"}]`, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := parse(t, "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\n"+tt.manifest)
			if got := statusWritten(u); got != tt.wantWritten {
				t.Errorf("statusWritten = %v, want %v", got, tt.wantWritten)
			}
			if got := ready(u); got != tt.wantOK {
				t.Errorf("ready = %v, want %v", got, tt.wantOK)
			}
		})
	}
}

// parse turns a YAML fixture into an object with the API machinery's
// number types (int64, not float64).
func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestNamespaceWrites(t *testing.T) {
	a := apiWrites{byResource: map[string]float64{
		"namespaces": 2, "namespaces/finalize": 1, "namespaces/status": 1, "pods": 5,
	}}
	if got := a.namespaceWrites(); got != 4 {
		t.Errorf("namespaceWrites = %v, want 4", got)
	}
	if got := a.total(); got != 9 {
		t.Errorf("total = %v, want 9", got)
	}
}

func TestProcessCPU(t *testing.T) {
	before, ok := processCPU(os.Getpid())
	if !ok {
		t.Fatal("cannot read this process's CPU time from /proc")
	}
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
	}
	after, _ := processCPU(os.Getpid())
	if after <= before {
		t.Errorf("CPU time did not grow over 200ms of busy loop: %v then %v", before, after)
	}
	if _, ok := processCPU(-1); ok {
		t.Error("processCPU(-1) read a process that cannot exist")
	}
}

func TestAvailable(t *testing.T) {
	const head = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: p, generation: 1}\nspec: {replicas: 1, progressDeadlineSeconds: 600}\n"
	tests := []struct {
		name   string
		status string
		want   bool
	}{
		{"no status yet", "", false},
		{"pod not ready", "status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1}", false},
		{"available", `status:
  observedGeneration: 1
  replicas: 1
  updatedReplicas: 1
  readyReplicas: 1
  availableReplicas: 1
  conditions:
  - {type: Available, status: "True"}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := available(parse(t, head+tt.status)); got != tt.want {
				t.Errorf("available = %v, want %v", got, tt.want)
			}
		})
	}
}
