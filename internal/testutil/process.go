package testutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Process is a program a test runs in a process of its own, such as
// `loom run`, with its stdout and stderr in a file.
type Process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // how it exited; set before done is closed
}

// StartProcess runs bin with args, appending its output to logPath. When
// the test ends it kills the process if it still runs and, if the test
// failed, logs the last lines of its output.
func StartProcess(t testing.TB, logPath, bin string, args ...string) *Process {
	t.Helper()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run make build (make test does): %v", bin, err)
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{cmd: exec.Command(bin, args...), log: logPath, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.Kill()
		if t.Failed() {
			t.Logf("last 80 lines of %s (pid %d):\n%s", logPath, p.Pid(), p.Tail(80))
		}
	})
	return p
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output is everything the process has written so far.
func (p *Process) Output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// Tail is the last n lines of the output.
func (p *Process) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Output(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Kill sends SIGKILL, unless the process has ended, and waits for it.
func (p *Process) Kill() error {
	if done, _ := p.Exited(); done {
		return nil
	}
	err := p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	return err
}

// Stop sends SIGTERM and fails the test unless the process exits 0 within
// the given time.
func (p *Process) Stop(t testing.TB, within time.Duration) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM pid %d: %v", p.Pid(), err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("%s exited with %v after SIGTERM:\n%s", p.cmd.Path, p.err, p.Tail(40))
		}
	case <-time.After(within):
		t.Fatalf("%s did not exit within %s of SIGTERM:\n%s", p.cmd.Path, within, p.Tail(40))
	}
}

// Memory returns the process's resident set size now (VmRSS) and at its
// peak (VmHWM), in bytes, from /proc/PID/status.
func (p *Process) Memory() (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return 0, 0, fmt.Errorf("read memory of pid %d: %w", p.Pid(), err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		// "   123456 kB"
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parse %s of pid %d: %w", name, p.Pid(), err)
		}
		if name == "VmRSS" {
			rss = kb * 1024
		} else {
			hwm = kb * 1024
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, fmt.Errorf("no VmRSS/VmHWM in /proc/%d/status", p.Pid())
	}
	return rss, hwm, sc.Err()
}
