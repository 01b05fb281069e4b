package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loom-operator/loom/internal/testutil"
)

// loomProc is `bin/loom run` in a process of its own, as users run it: its
// default flags (all namespaces, its own workers and QPS) plus -loom-args
// (and, for a replica of a sharded phase, --sharded and ports of its own;
// see replicaArgs), in a working folder whose templates/ is a copy of
// -templates, with KUBECONFIG in its environment.
type loomProc struct {
	proc *testutil.Process
	// args are its arguments after run, as given: a restart starts it
	// again with them.
	args []string
	// metricsAddr is its --metrics-bind-address; metricsURL where this
	// process reads it.
	metricsAddr, metricsURL string
	// log is its log file.
	log string
	// exitExpected is set before the harness stops it in the middle of a
	// phase (a takeover), whose end then does not fail the phase.
	exitExpected atomic.Bool
	// cg is the memory cgroup it runs in (-loom-memory-limit), or nil.
	cg *memCgroup
}

// stopGrace is how long Loom gets to drain after SIGTERM before SIGKILL.
const stopGrace = 60 * time.Second

// startLoomProcess starts `loom run` with args (after run) in dir (which
// holds templates/), and waits until it serves its metrics on
// metricsAddr. Its output goes to dir/logName.
func startLoomProcess(ctx context.Context, o options, dir string, args []string, metricsAddr, logName string) (*loomProc, error) {
	if err := waitPortFree(ctx, metricsAddr, o.portWait); err != nil {
		return nil, err
	}
	bin, err := filepath.Abs(o.loomBin)
	if err != nil {
		return nil, fmt.Errorf("-loom-bin %s: %w", o.loomBin, err)
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("-loom-bin: %w (make build builds bin/loom)", err)
	}
	kubeconfig, err := filepath.Abs(o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("-kubeconfig %s: %w", o.kubeconfig, err)
	}
	given := append([]string(nil), args...)
	args = append([]string{"run"}, args...)
	if o.loomV != 0 {
		args = append(args, "--v="+strconv.Itoa(o.loomV))
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	// Loom must not outlive the harness, however the harness ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var cg *memCgroup
	if o.loomMemoryLimit > 0 {
		if cg, err = newMemCgroup(int64(o.loomMemoryLimit * (1 << 20))); err != nil {
			return nil, err
		}
		cg.wrap(cmd)
	}
	log := filepath.Join(dir, logName)
	proc, err := testutil.StartCommand(cmd, log)
	if err != nil {
		if cg != nil {
			err = errors.Join(err, cg.remove())
		}
		return nil, err
	}
	l := &loomProc{proc: proc, args: given, metricsAddr: metricsAddr, metricsURL: metricsURL(metricsAddr), log: log, cg: cg}
	if err := l.waitServing(ctx, time.Minute); err != nil {
		_ = proc.Kill()
		return nil, errors.Join(fmt.Errorf("start %s: %w\n%s", bin, err, l.tail()), l.removeCgroup())
	}
	where := ""
	if cg != nil {
		where = fmt.Sprintf(", in memory cgroup %s limited to %g MiB", cg.dir, o.loomMemoryLimit)
	}
	logf("loom: pid %d, %s %v in %s%s, metrics at %s", proc.Pid(), o.loomBin, args, dir, where, l.metricsURL)
	return l, nil
}

// waitPortFree waits up to limit for nothing to listen on addr, and then
// fails as portFree does.
func waitPortFree(ctx context.Context, addr string, limit time.Duration) error {
	start := time.Now()
	for {
		err := portFree(addr)
		if err == nil || time.Since(start) >= limit {
			return err
		}
		if time.Since(start) < time.Second {
			logf("%v; waiting up to %s (-port-wait)", err, limit)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// portFree fails, naming the port, if something already listens on addr.
func portFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_, port, _ := net.SplitHostPort(addr)
		return fmt.Errorf("port %s, Loom's --metrics-bind-address %s, is already in use (another Loom, or a test?): wait until it is free, or pass another with -loom-args: %w", port, addr, err)
	}
	return ln.Close()
}

// waitServing waits until Loom answers on /metrics, or fails if it exits.
func (l *loomProc) waitServing(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := testutil.ScrapeMetrics(sctx, l.metricsURL)
		cancel()
		if err == nil {
			return nil
		}
		if done, exitErr := l.proc.Exited(); done {
			return fmt.Errorf("it exited before serving its metrics: %v", exitErr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no metrics at %s within %s: %w", l.metricsURL, limit, err)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stats scrapes this one process's counters.
func (l *loomProc) stats(ctx context.Context) (loomStats, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := testutil.ScrapeMetrics(ctx, l.metricsURL)
	if err != nil {
		return loomStats{}, fmt.Errorf("scrape Loom's metrics: %w", err)
	}
	return loomStatsFrom(m), nil
}

func (l *loomProc) pid() int                { return l.proc.Pid() }
func (l *loomProc) exited() <-chan struct{} { return l.proc.Done() }

// tail returns the last lines of its log, after what its memory cgroup
// saw (an OOM kill is why a process in one ends).
func (l *loomProc) tail() string {
	s := "last 40 lines of its log:\n" + l.proc.Tail(40)
	if l.cg != nil {
		s = l.cg.describe() + "\n" + s
	}
	return s
}

// stop sends SIGTERM, and SIGKILL if Loom has not drained within
// stopGrace, then logs what its memory cgroup saw and removes it.
func (l *loomProc) stop() error {
	if err := l.proc.Terminate(stopGrace); err != nil {
		return errors.Join(fmt.Errorf("stop loom: %w", err), l.removeCgroup())
	}
	return l.removeCgroup()
}

// removeCgroup logs what the memory cgroup saw and removes it, once the
// process has ended.
func (l *loomProc) removeCgroup() error {
	if l.cg == nil {
		return nil
	}
	<-l.proc.Done()
	logf("loom: pid %d ended: %s", l.proc.Pid(), l.cg.describe())
	err := l.cg.remove()
	l.cg = nil
	return err
}

// loomWorkdir makes Loom's working folder: a temporary folder holding a
// copy of the templates folder as templates/, the default of --templates.
// Loom's templates are that copy in both modes, so that the re-reconcile
// can touch a template without changing the repository's.
func loomWorkdir(templates string) (string, error) {
	dir, err := os.MkdirTemp("", "converge-loom-")
	if err != nil {
		return "", fmt.Errorf("loom working folder: %w", err)
	}
	if err := testutil.CopyDir(templates, filepath.Join(dir, "templates")); err != nil {
		return "", errors.Join(fmt.Errorf("copy %s for Loom: %w", templates, err), os.RemoveAll(dir))
	}
	return dir, nil
}
