package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/internal/testutil"
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

func TestLoomStatsFrom(t *testing.T) {
	const loomOnly = `# TYPE loom_reconcile_total counter
loom_reconcile_total{kind="MyResource",result="success"} 110
loom_reconcile_total{kind="MyResource",result="error"} 3
# TYPE loom_status_writes_total counter
loom_status_writes_total{kind="MyResource"} 104
# TYPE loom_child_changes_total counter
loom_child_changes_total{action="created",kind="MyResource"} 150
loom_child_changes_total{action="unchanged",kind="MyResource"} 189
# TYPE loom_reconcile_duration_seconds histogram
loom_reconcile_duration_seconds_bucket{kind="MyResource",le="+Inf"} 113
loom_reconcile_duration_seconds_sum{kind="MyResource"} 67.5
loom_reconcile_duration_seconds_count{kind="MyResource"} 113
`
	const runtime = `# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 1.4155776e+07
`
	const queue = `# TYPE workqueue_adds_total counter
workqueue_adds_total{name="MyResource.example.loom.dev"} 140
workqueue_adds_total{name="other"} 7
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="MyResource.example.loom.dev",le="+Inf"} 140
workqueue_queue_duration_seconds_sum{name="MyResource.example.loom.dev"} 2.5
workqueue_queue_duration_seconds_count{name="MyResource.example.loom.dev"} 140
`
	loom := loomStats{Reconciles: 113, StatusWrites: 104, ReconcileSeconds: 67.5,
		Changes: map[string]float64{"created": 150, "unchanged": 189}}
	withHeap := loom
	withHeap.HeapInuse, withHeap.HeapKnown = 14155776, true
	withQueue := loom
	withQueue.Queue = queueStats{Available: true, Adds: 140, WaitSum: 2.5, WaitN: 140}
	tests := []struct {
		name, text string
		want       loomStats
	}{
		{"loom's own", loomOnly, loom},
		{"with the Go runtime's", loomOnly + runtime, withHeap},
		{"with the workqueue's", loomOnly + queue, withQueue},
		{"nothing", "", loomStats{Changes: map[string]float64{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := testutil.ParseMetrics(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, loomStatsFrom(m)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestWriterRequests(t *testing.T) {
	a := apiWrites{byResource: map[string]float64{
		"configmaps": 100, "services": 100, "deployments": 100, "deployments/status": 400,
		"myresources": 100, "myresources/status": 208, "events": 300, "pods": 100,
	}}
	for _, tc := range []struct {
		name string
		bare bool
		want requests
	}{
		{"Events of every client", false, requests{Children: 300, Status: 208}},
		{"bare: only the writer writes Events", true, requests{Children: 300, Status: 208, Events: 300}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, a.writerRequests(tc.bare)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestProcField(t *testing.T) {
	const cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	const meminfo = "MemTotal:       24683824 kB\nMemFree:        22105180 kB\n"
	for _, tc := range []struct{ text, name, want string }{
		{cpuinfo, "model name", "AMD EPYC 7B13"},
		{cpuinfo, "model", ""},
		{meminfo, "MemTotal", "24683824 kB"},
		{"", "MemTotal", ""},
	} {
		if got := procField(tc.text, tc.name); got != tc.want {
			t.Errorf("procField(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestAppendTouch(t *testing.T) {
	for _, tc := range []struct{ name, before, after string }{
		{"ends with a newline", "a: 1\n", "a: 1\n" + touchLine},
		{"no newline at the end", "{{- end }}", "{{- end }}\n" + touchLine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.yaml")
			if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := appendTouch(path); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if diff := cmp.Diff(tc.after, string(got)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// The touch changes the set's fingerprint (so Loom reloads it and
// reconciles every parent) but not what any parent renders.
func TestTouchChangesNothingRendered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "myresource")
	if err := testutil.CopyDir(filepath.Join("..", "..", "templates", "myresource"), dir); err != nil {
		t.Fatal(err)
	}
	parent, err := loadExample(filepath.Join("..", "..", "examples", "myresource-full.yaml"), 1)
	if err != nil {
		t.Fatal(err)
	}
	parent.SetNamespace("ns")
	before, err := render.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range before.Files() {
		if err := appendTouch(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	after, err := render.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before.Fingerprint() == after.Fingerprint() {
		t.Error("the fingerprint did not change: Loom would not reload the set")
	}
	want, err := before.Render(parent)
	if err != nil {
		t.Fatal(err)
	}
	got, err := after.Render(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 {
		t.Fatalf("the example renders %d children, want 3", len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children (-before +after the touch)\n%s", diff)
	}
}
