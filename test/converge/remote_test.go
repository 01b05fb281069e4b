package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/internal/testflags"
)

func parseArgs(t *testing.T, args string) (options, error) {
	t.Helper()
	fs := flag.NewFlagSet("converge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return parseFlags(fs, strings.Fields(args))
}

func TestParseRemotePhases(t *testing.T) {
	t.Setenv(workloadKubeconfigEnv, "")
	tests := []struct {
		name, args string
		want       []phaseSpec
		wantErr    string
	}{
		{name: "bench-clusters", args: "-phases loom@1000,remote@1000 -workload-kubeconfig w.kubeconfig", want: []phaseSpec{
			{kind: "loom", text: "loom@1000", parents: 1000, replicas: 1},
			{kind: "loom", text: "remote@1000", parents: 1000, replicas: 1, remote: true},
		}},
		{name: "sharded remote", args: "-phases remote/3@600 -workload-kubeconfig w.kubeconfig", want: []phaseSpec{
			{kind: "loom", text: "remote/3@600", parents: 600, replicas: 3, sharded: true, remote: true},
		}},
		{name: "no workload cluster", args: "-phases loom,remote",
			wantErr: "-phases: a remote phase places children in the workload cluster, and none is given: pass -workload-kubeconfig, or set $LOOM_E2E_WORKLOAD_KUBECONFIG"},
		{name: "no workload cluster needed without a remote phase", args: "-phases base,loom", want: []phaseSpec{
			{kind: "base", text: "base", parents: 1000},
			{kind: "loom", text: "loom", parents: 1000, replicas: 1},
		}},
		{name: "remote needs loom run", args: "-phases remote -loom-mode inprocess -workload-kubeconfig w.kubeconfig", wantErr: "a remote phase runs loom run"},
		{name: "remote is not a modifier", args: "-phases loom/remote -workload-kubeconfig w.kubeconfig", wantErr: `/remote is not a number of replicas`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseArgs(t, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, o.phases, cmp.AllowUnexported(phaseSpec{})); diff != "" {
				t.Errorf("phases (-want +got)\n%s", diff)
			}
		})
	}
}

func TestPhaseName(t *testing.T) {
	o, err := parseArgs(t, "-phases base,loom/2,remote@5 -workload-kubeconfig w.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range o.phases {
		got = append(got, s.name())
	}
	if diff := cmp.Diff([]string{"base", "loom", "remote"}, got); diff != "" {
		t.Errorf("names (-want +got)\n%s", diff)
	}
}

func TestDefaultWorkloadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv(workloadKubeconfigEnv, "")
	if got := defaultWorkloadKubeconfig(); got != "" {
		t.Errorf("without the variable or the file: %q, want none", got)
	}
	path := filepath.Join(".cluster-workload", "kubeconfig")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := defaultWorkloadKubeconfig(); got != path {
		t.Errorf("with the file: %q, want %q", got, path)
	}
	t.Setenv(workloadKubeconfigEnv, "/elsewhere/kubeconfig")
	if got := defaultWorkloadKubeconfig(); got != "/elsewhere/kubeconfig" {
		t.Errorf("with the variable: %q, want it", got)
	}
	o, err := parseArgs(t, "-phases remote")
	if err != nil || o.workloadKubeconfig != "/elsewhere/kubeconfig" {
		t.Errorf("-workload-kubeconfig defaults to %q (err %v), want the variable's", o.workloadKubeconfig, err)
	}
}

func TestRegistrationNamespace(t *testing.T) {
	tests := []struct{ args, want string }{
		{"", "loom-system"},
		{"--workers 4", "loom-system"},
		{"--loom-namespace loom", "loom"},
		{"--loom-namespace=a --loom-namespace=b", "b"},
	}
	for _, tt := range tests {
		if got := registrationNamespace(strings.Fields(tt.args)); got != tt.want {
			t.Errorf("registrationNamespace(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// The Secret the phase writes is one Loom reads back as the registration
// of the cluster the remote set names.
func TestRegistrationSecret(t *testing.T) {
	kubeconfig := []byte("apiVersion: v1\nkind: Config\n")
	u, err := registrationSecret("loom", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		t.Fatal(err)
	}
	reg, ok, err := cluster.FromSecret(&s, "loom")
	if err != nil || !ok {
		t.Fatalf("FromSecret = %v, %v", ok, err)
	}
	got := []any{u.GetAPIVersion(), u.GetKind(), u.GetName(), u.GetNamespace(), u.GetLabels()[cluster.LabelCluster], reg.Name, string(reg.Kubeconfig)}
	want := []any{"v1", "Secret", remoteCluster, "loom", remoteCluster, remoteCluster, string(kubeconfig)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if _, ok, _ := cluster.FromSecret(&s, "loom-system"); ok {
		t.Error("the Secret registers a cluster for a Loom in another namespace")
	}
	if _, err := registrationSecret("loom", nil); err == nil {
		t.Error("a registration without a kubeconfig")
	}
}

// remoteSetDir is the remote phases' template set.
const remoteSetDir = "testdata/remote/myresource"

// The remote set renders offline as Loom renders it in a remote phase:
// given the registration, the ConfigMap goes to the workload cluster and
// the Deployment and the Service stay; without it, the render fails.
func TestRemoteTemplateSet(t *testing.T) {
	set, err := render.Load(remoteSetDir)
	if err != nil {
		t.Fatal(err)
	}
	results, err := offline.RunOptions(set, offline.Options{Timeout: offline.DefaultTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Failed() {
		t.Fatalf("results = %+v, want one case passing (loom test %s --update rewrites it)", results, remoteSetDir)
	}
	golden, err := os.ReadFile(filepath.Join(remoteSetDir, render.TestsDir, "full"+offline.GoldenSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(golden), "loom.dev/cluster: "+remoteCluster); n != 1 {
		t.Errorf("the golden file places %d children in %s, want 1 (the ConfigMap)", n, remoteCluster)
	}
	for _, kind := range []string{"ConfigMap", "Deployment", "Service"} {
		if !strings.Contains(string(golden), "kind: "+kind+"\n") {
			t.Errorf("the golden file has no %s", kind)
		}
	}
	results, err = offline.RunOptions(set, offline.Options{Timeout: offline.DefaultTimeout, LoomNamespace: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || !results[0].Failed() {
		t.Errorf("without the registration: results = %+v, want the case failing", results)
	}
	shipped, err := render.Load(filepath.Join("..", "..", "templates", "myresource"))
	if err != nil {
		t.Fatal(err)
	}
	if set.ParentGVK() != shipped.ParentGVK() {
		t.Errorf("the remote set renders %s, the shipped one %s: the phases would create different parents", set.ParentGVK(), shipped.ParentGVK())
	}
}

// remoteRun is what bench-clusters measures, small: one Loom on 200
// parents with every child local, then one on 200 whose ConfigMaps are in
// the workload cluster.
func remoteRun(t *testing.T, extra string) (options, []phaseResult) {
	t.Helper()
	o, err := parseArgs(t, "-phases loom@200,remote@200 -workload-kubeconfig w.kubeconfig -idle 0 "+extra)
	if err != nil {
		t.Fatal(err)
	}
	const mi = 1 << 20
	phase := func(i int, t1, t2 time.Duration, peak int64, local, remote apiWrites) phaseResult {
		at := "t2"
		if o.bare {
			at = "t1"
		}
		r := phaseResult{kind: kindLoom, label: o.phases[i].text + "#" + strconv.Itoa(i+1), spec: o.phases[i], bare: o.bare,
			after: &loomAfter{mem: true, hwmTimed: peak, hwmEnd: peak - 2*mi, touch: touchResult{parents: 201, reconciles: 201, complete: true}},
			timed: roundResult{n: 200, t1: t1, t2: t2,
				at: map[string]mark{at: {
					cpu:  cpuSample{proc: map[string]float64{"loom": 4.5 * float64(i+1)}},
					loom: loomStats{Reconciles: 420, ReconcileSeconds: 8.4 * float64(i+1)},
				}, "end": {cpu: cpuSample{proc: map[string]float64{"loom": 5}}}},
				api: map[string]apiWrites{at: local},
			}}
		if o.phases[i].remote {
			r.timed.remoteAPI = map[string]apiWrites{at: remote}
		}
		return r
	}
	local := func(all float64, byResource map[string]float64) apiWrites {
		return apiWrites{all: all, byResource: byResource}
	}
	return o, []phaseResult{
		phase(0, 4*time.Second, 6*time.Second, 50*mi,
			local(3100, map[string]float64{"configmaps": 200, "deployments": 200, "services": 200, "myresources/status": 400, "myresources": 200}), apiWrites{}),
		phase(1, 5*time.Second, 8*time.Second, 70*mi,
			local(2900, map[string]float64{"deployments": 200, "services": 200, "myresources/status": 400, "myresources": 200}),
			local(640, map[string]float64{"configmaps": 200})),
	}
}

// TestRemoteReport checks the report of a run with children in two
// clusters against testdata/remote-report.golden (-update rewrites it).
func TestRemoteReport(t *testing.T) {
	o, results := remoteRun(t, "")
	var b bytes.Buffer
	fmt.Fprintf(&b, "converge: %s\n", parentsPerPhase(o))
	reportPhases(&b, o)
	reportRemote(&b, o, results)
	b.WriteString("\n")
	writeTargets(&b, targetRows(o, results))
	golden := filepath.Join("testdata", "remote-report.golden")
	if *testflags.Update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("report (-want +got)\n%s", diff)
	}
}

func TestRemoteTargetRows(t *testing.T) {
	o, results := remoteRun(t, "")
	bareO, bareResults := remoteRun(t, "-bare -target-remote-time 1.2 -target-remote-rss 1.5")
	sharded, _ := parseArgs(t, "-phases loom/2@200,remote@200 -workload-kubeconfig w.kubeconfig")
	shardedResults := append([]phaseResult(nil), results...)
	shardedResults[0].spec = sharded.phases[0]
	tests := []struct {
		name    string
		o       options
		results []phaseResult
		want    []targetRow
	}{
		{name: "two clusters against one", o: o, results: results, want: []targetRow{
			{what: "time to Ready (t2), two clusters / one", target: "≤ 1.3", measured: "1.333 (8.00s / 6.00s)", verdict: "MISS"},
			{what: "peak RSS, two clusters / one", target: "≤ 1.3", measured: "1.400 (70.0 MiB / 50.0 MiB)", verdict: "MISS"},
		}},
		{name: "bare: t1", o: bareO, results: bareResults, want: []targetRow{
			{what: "every status written (t1), two clusters / one", target: "≤ 1.2", measured: "1.250 (5.00s / 4.00s)", verdict: "MISS"},
			{what: "peak RSS, two clusters / one", target: "≤ 1.5", measured: "1.400 (70.0 MiB / 50.0 MiB)", verdict: "PASS"},
		}},
		{name: "no loom phase", o: o, results: results[1:]},
		{name: "no remote phase", o: o, results: results[:1]},
		{name: "a sharded loom phase is not one Loom", o: sharded, results: shardedResults},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, remoteTargetRows(tt.o, tt.results), cmp.AllowUnexported(targetRow{})); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// A remote phase is left out of the ratios to the baseline, which writes
// every child in one cluster, and out of the sharded comparison.
func TestRatiosLeaveRemoteOut(t *testing.T) {
	o, results := remoteRun(t, "")
	base := phaseAt(kindBase, 2*time.Second, 3*time.Second, nil)
	rows := targetRows(o, append([]phaseResult{base}, results...))
	var got []string
	for _, r := range rows {
		if strings.Contains(r.what, "÷ floor") {
			got = append(got, r.what+" "+r.measured)
		}
	}
	want := []string{"all children exist ÷ floor (t1) 2.000", "all Ready ÷ floor (t2) 2.000"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ratios to the baseline (-want +got)\n%s", diff)
	}
	if _, ok := shardPeaksOf(results); ok {
		t.Error("a remote phase compared as a sharded one")
	}
}

// A remote phase's writes are its children's in both clusters; the
// workload cluster's other writes (the API server's own leases) and
// Events are not Loom's children.
func TestWriterRequestsIn(t *testing.T) {
	local := apiWrites{byResource: map[string]float64{
		"deployments": 200, "services": 200, "myresources/status": 400, "myresources": 200, "events": 30,
	}}
	workload := apiWrites{byResource: map[string]float64{"configmaps": 200, "leases": 3, "events": 7}}
	tests := []struct {
		name            string
		local, workload apiWrites
		bare            bool
		want            requests
	}{
		{name: "remote phase", local: local, workload: workload, want: requests{Children: 600, Status: 400}},
		{name: "remote phase, bare", local: local, workload: workload, bare: true, want: requests{Children: 600, Status: 400, Events: 30}},
		{name: "one cluster", local: local, want: requests{Children: 400, Status: 400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := writerRequestsIn(tt.local, tt.workload, tt.bare)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	p := phaseResult{spec: phaseSpec{kind: kindLoom, remote: true}, timed: roundResult{
		api: map[string]apiWrites{"end": local}, remoteAPI: map[string]apiWrites{"end": workload},
	}}
	if got := p.writes("end"); got.Children != 600 {
		t.Errorf("a remote phase's writes: children %d, want 600 (both clusters')", got.Children)
	}
}
