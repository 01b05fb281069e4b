package testutil

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMetricsSum(t *testing.T) {
	const text = `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="configmaps",subresource="",verb="APPLY"} 7
apiserver_request_total{code="409",resource="configmaps",subresource="",verb="APPLY"} 2
apiserver_request_total{code="200",resource="myresources",subresource="status",verb="APPLY"} 5
apiserver_request_total{code="200",resource="pods",subresource="",verb="GET"} 100
# TYPE loom_template_sets gauge
loom_template_sets 1
`
	m, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		metric string
		match  map[string]string
		want   float64
	}{
		{"every sample", "apiserver_request_total", nil, 114},
		{"one label", "apiserver_request_total", map[string]string{"verb": "APPLY"}, 14},
		{"two labels", "apiserver_request_total", map[string]string{"verb": "APPLY", "resource": "configmaps"}, 9},
		{"empty label value", "apiserver_request_total", map[string]string{"subresource": ""}, 109},
		{"a gauge", "loom_template_sets", nil, 1},
		{"no such metric", "nope", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, m.Sum(tc.metric, tc.match)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	if _, err := ParseMetrics(strings.NewReader("broken{")); err == nil {
		t.Error("a broken exposition parsed without an error")
	}
}

// A process's output, memory and SIGTERM/SIGKILL handling.
func TestProcess(t *testing.T) {
	script := `trap 'echo bye; exit 0' TERM; for i in 1 2 3; do echo line $i; done; while :; do sleep 0.05; done`
	p := StartProcess(t, filepath.Join(t.TempDir(), "out.log"), "/bin/sh", "-c", script)
	Eventually(t, 5*time.Second, "three lines of output", func(context.Context) error {
		if got := p.Tail(2); got != "line 2\nline 3" {
			return fmt.Errorf("tail %q", got)
		}
		return nil
	})
	rss, hwm, err := p.Memory()
	if err != nil || rss <= 0 || hwm < rss {
		t.Errorf("Memory() = %d, %d, %v; want 0 < rss <= hwm", rss, hwm, err)
	}
	if done, _ := p.Exited(); done {
		t.Fatal("exited early")
	}
	p.Stop(t, 5*time.Second)
	if !strings.HasSuffix(p.Output(), "bye\n") {
		t.Errorf("output %q does not end with the TERM trap's line", p.Output())
	}

	q := StartProcess(t, filepath.Join(t.TempDir(), "out.log"), "/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done")
	if err := q.Kill(); err != nil {
		t.Fatal(err)
	}
	if done, err := q.Exited(); !done || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("after Kill: exited %v, err %v; want a process killed by SIGKILL", done, err)
	}
}

// Terminate stops a process that honours SIGTERM, kills one that does not,
// and says so.
func TestTerminate(t *testing.T) {
	p, err := StartCommand(exec.Command("/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"), filepath.Join(t.TempDir(), "a.log"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the shell set its trap
	if err := p.Terminate(5 * time.Second); err != nil {
		t.Errorf("Terminate of a process that exits on SIGTERM: %v", err)
	}
	q, err := StartCommand(exec.Command("/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"), filepath.Join(t.TempDir(), "b.log"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	err = q.Terminate(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Terminate of a process that ignores SIGTERM = %v, want an error saying it was killed", err)
	}
	if done, _ := q.Exited(); !done {
		t.Error("the process still runs after Terminate")
	}
}

// ForEach calls fn once for each index, and its first error stops it.
func TestForEach(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	err := ForEach(context.Background(), 100, 7, func(_ context.Context, i int) error {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return nil
	})
	if err != nil || len(seen) != 100 {
		t.Fatalf("ForEach = %v, %d indexes seen, want nil, 100", err, len(seen))
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("index %d called %d times", i, n)
		}
	}
	var calls atomic.Int64
	boom := errors.New("boom")
	err = ForEach(context.Background(), 10000, 4, func(ctx context.Context, i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || calls.Load() > 100 {
		t.Errorf("ForEach = %v after %d calls; want boom, soon after the 11th", err, calls.Load())
	}
}
