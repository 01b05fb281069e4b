// Package procmem reads a process's memory as Linux reports it in
// /proc/PID/status: what a pod's memory limit sees, not a heap figure.
package procmem

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Status is a process's memory from /proc/PID/status, in bytes.
type Status struct {
	// RSS is resident now (VmRSS), HWM at its peak (VmHWM).
	RSS, HWM int64
	// Anon and File are the parts of RSS that are anonymous memory (the
	// heap, stacks) and mapped files (the binary's pages), when the kernel
	// reports them (RssAnon, RssFile).
	Anon, File int64
}

// Read reads the memory of process pid; 0 is this process.
func Read(pid int) (Status, error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	if pid == 0 {
		path = "/proc/self/status"
	}
	f, err := os.Open(path)
	if err != nil {
		return Status{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	m, err := Parse(f)
	if err != nil {
		return Status{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	return m, nil
}

// Parse reads the text of a /proc/PID/status file. VmRSS and VmHWM
// must be in it.
func Parse(r io.Reader) (Status, error) {
	var m Status
	fields := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.HWM, "RssAnon": &m.Anon, "RssFile": &m.File}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		field := fields[name]
		if !ok || field == nil {
			continue
		}
		// "   123456 kB"
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return Status{}, fmt.Errorf("parse %s: %w", name, err)
		}
		*field = kb * 1024
	}
	if err := sc.Err(); err != nil {
		return Status{}, err
	}
	if m.RSS == 0 || m.HWM == 0 {
		return Status{}, errors.New("no VmRSS or VmHWM (a kernel thread, or a zombie)")
	}
	return m, nil
}
