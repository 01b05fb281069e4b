package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/loom-operator/loom/internal/procmem"
	"github.com/loom-operator/loom/internal/testutil"
)

// idleNamespace is the namespace the idle step's Loom and floor watch: no
// phase creates it, so both hold nothing.
const idleNamespace = "converge-idle"

// idleResult is what the idle step measured: `bin/loom run` holding no
// parent, and the floor program (test/converge/floor) beside it, each
// read from /proc once it has been up for -idle.
type idleResult struct {
	loom, floor         procmem.Status
	loomBin, floorBin   int64 // the binaries' sizes in bytes
	floorErr            error // the floor could not be built or run
	loomArgs, floorArgs []string
}

// measureIdle runs the idle step (process mode, -idle > 0): Loom with its
// default flags and -loom-args, watching idleNamespace only, then the
// floor. A failure of Loom's is the run's; the floor's is reported in the
// result, since it is a reference, not what is measured.
func measureIdle(ctx context.Context, o options) (*idleResult, error) {
	res := &idleResult{}
	dir, err := loomWorkdir(o.templates)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res.loomArgs = append(append([]string{}, o.loomArgs...), "--namespace", idleNamespace)
	l, err := startLoomProcess(ctx, o, dir, res.loomArgs, o.metricsAddr, "loom-idle.log")
	if err != nil {
		return nil, fmt.Errorf("idle step: %w", err)
	}
	if err := sleep(ctx, o.idle); err != nil {
		return nil, errors.Join(err, l.stop())
	}
	res.loom, err = procmem.Read(l.pid())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("idle step: %w\n%s", err, l.tail()), l.stop())
	}
	if err := l.stop(); err != nil {
		return nil, err
	}
	res.loomBin = fileSize(o.loomBin)
	logf("idle: loom %s (anon %s, file %s)", mib(res.loom.RSS), mib(res.loom.Anon), mib(res.loom.File))
	if o.floor == "" {
		return res, nil
	}
	res.floor, res.floorBin, res.floorErr = runFloor(ctx, o, dir)
	if res.floorErr != nil {
		logf("idle: the floor did not run: %v", res.floorErr)
	} else {
		logf("idle: floor %s (anon %s, file %s)", mib(res.floor.RSS), mib(res.floor.Anon), mib(res.floor.File))
	}
	return res, ctx.Err()
}

// runFloor builds -floor into dir, runs it for -idle, and reads its
// memory.
func runFloor(ctx context.Context, o options, dir string) (procmem.Status, int64, error) {
	bin := filepath.Join(dir, "floor")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, o.floor)
	if out, err := build.CombinedOutput(); err != nil {
		return procmem.Status{}, 0, fmt.Errorf("go build %s: %w\n%s", o.floor, err, out)
	}
	kubeconfig, err := filepath.Abs(o.kubeconfig)
	if err != nil {
		return procmem.Status{}, 0, err
	}
	cmd := exec.Command(bin, "-namespace", idleNamespace)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	proc, err := testutil.StartCommand(cmd, filepath.Join(dir, "floor.log"))
	if err != nil {
		return procmem.Status{}, 0, err
	}
	defer func() { _ = proc.Terminate(10 * time.Second) }()
	if err := sleep(ctx, o.idle); err != nil {
		return procmem.Status{}, 0, err
	}
	if done, exitErr := proc.Exited(); done {
		return procmem.Status{}, 0, fmt.Errorf("it exited: %v\n%s", exitErr, proc.Tail(20))
	}
	m, err := procmem.Read(proc.Pid())
	return m, fileSize(bin), err
}

// fileSize is the size of a file, or 0.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// reportIdle prints the idle step: each process's RSS, split into its
// anonymous part (heap, stacks) and its file-backed part (the binary's
// pages the kernel mapped), and Loom's excess over the floor.
func reportIdle(w io.Writer, r *idleResult) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nidle (no parent; namespace %s; RSS after -idle):\n", idleNamespace)
	line := func(name string, m procmem.Status, bin int64) {
		fmt.Fprintf(w, "  %-6s %s = %s anonymous + %s file-backed (binary %.1f MB)\n", name, mib(m.RSS), mib(m.Anon), mib(m.File), float64(bin)/1e6)
	}
	line("loom", r.loom, r.loomBin)
	switch {
	case r.floorErr != nil:
		fmt.Fprintf(w, "  floor  not measured: %v\n", r.floorErr)
	case r.floorBin > 0:
		line("floor", r.floor, r.floorBin)
		fmt.Fprintf(w, "  loom - floor: %s (%s anonymous, %s file-backed)\n",
			mib(r.loom.RSS-r.floor.RSS), mib(r.loom.Anon-r.floor.Anon), mib(r.loom.File-r.floor.File))
		fmt.Fprintln(w, "  (floor: test/converge/floor, client-go discovery + dynamic watch + text/template with sprig + Prometheus, idle)")
	}
}

// idleTargetRow is the idle target's row of the targets table.
func idleTargetRow(o options, r *idleResult) targetRow {
	row := targetRow{what: "idle RSS (no parent)", target: fmt.Sprintf("≤ %g MiB", o.targetIdleRSS), measured: "n/a"}
	if r == nil {
		return row
	}
	row.measured, row.verdict = mib(r.loom.RSS), verdict(float64(r.loom.RSS)/(1<<20), o.targetIdleRSS)
	if r.floorErr == nil && r.floorBin > 0 {
		row.measured += fmt.Sprintf(" (floor %s)", mib(r.floor.RSS))
	}
	return row
}
