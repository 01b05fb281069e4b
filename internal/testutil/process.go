package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-operator/loom/internal/procmem"
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
	p, err := StartCommand(exec.Command(bin, args...), logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Kill()
		if t.Failed() {
			t.Logf("last 80 lines of %s (pid %d):\n%s", logPath, p.Pid(), p.Tail(80))
		}
	})
	return p
}

// StartCommand starts cmd (its Dir and Env as the caller set them) with
// its stdout and stderr appended to logPath, for a program that is not a
// test. The caller ends it with Terminate or Kill.
func StartCommand(cmd *exec.Cmd, logPath string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", cmd.Path, err)
	}
	p := &Process{cmd: cmd, log: logPath, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

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

// Terminate sends SIGTERM and waits up to grace for the process to exit,
// then sends SIGKILL. It returns nil if the process exited 0 after the
// SIGTERM (or had already ended that way), and otherwise says how it ended.
func (p *Process) Terminate(grace time.Duration) error {
	if done, err := p.Exited(); done {
		if err != nil {
			return fmt.Errorf("%s (pid %d) had already exited: %w", p.cmd.Path, p.Pid(), err)
		}
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM pid %d: %w", p.Pid(), err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("%s (pid %d) exited after SIGTERM: %w", p.cmd.Path, p.Pid(), p.err)
		}
		return nil
	case <-time.After(grace):
		_ = p.Kill()
		return fmt.Errorf("%s (pid %d) did not exit within %s of SIGTERM; killed", p.cmd.Path, p.Pid(), grace)
	}
}

// Memory returns the process's resident set size now (VmRSS) and at its
// peak (VmHWM), in bytes, from /proc/PID/status.
func (p *Process) Memory() (rss, hwm int64, err error) {
	m, err := procmem.Read(p.Pid())
	return m.RSS, m.HWM, err
}

// WithoutWebhook returns loom run's args with --webhook-bind-address=0
// added, unless they set the flag: the shipped set serves several
// versions, so every loom run on it would listen on :9443, and the
// second on one machine would fail to start. Tests of the webhook give
// it an address of their own.
func WithoutWebhook(args []string) []string {
	for _, a := range args {
		if a == "--webhook-bind-address" || strings.HasPrefix(a, "--webhook-bind-address=") {
			return args
		}
	}
	return append(args, "--webhook-bind-address=0")
}
