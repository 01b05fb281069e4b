package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// memCgroup is a memory cgroup of its own that one `loom run` runs in,
// limited as a pod's limits.memory limits its container
// (-loom-memory-limit). Loom sets GOMEMLIMIT from the limit it finds
// there (automemlimit), so a run in it shows what the limit costs: the
// garbage collector's extra work, or the kernel's OOM kill.
//
// It is a child of the harness's own memory cgroup, in the cgroup v1
// memory hierarchy when the harness is in one (as on this machine) and
// otherwise in the unified (v2) hierarchy, whose parent must delegate the
// memory controller.
type memCgroup struct {
	dir   string
	v2    bool
	limit int64
}

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupSeq numbers the cgroups one harness makes.
var cgroupSeq atomic.Int64

// newMemCgroup makes a memory cgroup limited to limit bytes, named after
// the harness's pid and a sequence number.
func newMemCgroup(limit int64) (*memCgroup, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("-loom-memory-limit: %w", err)
	}
	path, v2, err := memoryCgroupPath(string(self))
	if err != nil {
		return nil, fmt.Errorf("-loom-memory-limit: %w", err)
	}
	base := filepath.Join(cgroupRoot, "memory", path)
	if v2 {
		base = filepath.Join(cgroupRoot, path)
		if _, err := os.Stat(filepath.Join(cgroupRoot, "unified", "cgroup.controllers")); err == nil {
			base = filepath.Join(cgroupRoot, "unified", path) // a hybrid mount
		}
	}
	cg := &memCgroup{dir: filepath.Join(base, fmt.Sprintf("converge-loom-%d-%d", os.Getpid(), cgroupSeq.Add(1))), v2: v2, limit: limit}
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		return nil, fmt.Errorf("-loom-memory-limit: make the memory cgroup: %w", err)
	}
	file, value := "memory.limit_in_bytes", strconv.FormatInt(limit, 10)
	if v2 {
		file = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(cg.dir, file), []byte(value), 0o644); err != nil {
		return nil, errors.Join(fmt.Errorf("-loom-memory-limit: set %s: %w", file, err), cg.remove())
	}
	return cg, nil
}

// memoryCgroupPath reads /proc/self/cgroup's text: the path of the
// process's cgroup in the v1 memory hierarchy if it has one (v2 false),
// else in the unified hierarchy (v2 true).
func memoryCgroupPath(procSelfCgroup string) (path string, v2 bool, err error) {
	unified := ""
	found := false
	sc := bufio.NewScanner(strings.NewReader(procSelfCgroup))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified, found = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				return parts[2], false, nil
			}
		}
	}
	if !found {
		return "", false, fmt.Errorf("no memory cgroup in /proc/self/cgroup")
	}
	return unified, true, nil
}

// wrap makes cmd join the cgroup before it runs its program: a shell
// writes its pid to cgroup.procs and execs the program in its place, so
// the process the harness measures (the same pid) is in the cgroup from
// its first instruction, before Loom reads its limit.
func (cg *memCgroup) wrap(cmd *exec.Cmd) {
	procs := filepath.Join(cg.dir, "cgroup.procs")
	args := append([]string{"/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, procs, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
}

// oomKills returns how often the kernel killed a process of the cgroup
// for memory.
func (cg *memCgroup) oomKills() (int, error) {
	file := "memory.oom_control"
	if cg.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(cg.dir, file))
	if err != nil {
		return 0, err
	}
	return oomKillCount(string(b)), nil
}

// oomKillCount reads the oom_kill line of memory.oom_control (v1) or
// memory.events (v2); 0 when there is none (kernels before 4.13).
func oomKillCount(text string) int {
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// peak returns the cgroup's largest memory use, page cache included.
func (cg *memCgroup) peak() (int64, error) {
	file := "memory.max_usage_in_bytes"
	if cg.v2 {
		file = "memory.peak"
	}
	b, err := os.ReadFile(filepath.Join(cg.dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// describe says what the cgroup saw, for the log and a failed phase.
func (cg *memCgroup) describe() string {
	s := fmt.Sprintf("memory cgroup %s, limit %.1f MiB", cg.dir, float64(cg.limit)/(1<<20))
	if p, err := cg.peak(); err == nil {
		s += fmt.Sprintf(", peak use %.1f MiB (page cache included)", float64(p)/(1<<20))
	}
	if n, err := cg.oomKills(); err == nil {
		s += fmt.Sprintf(", OOM kills %d", n)
	}
	return s
}

// remove deletes the cgroup, once its processes have ended.
func (cg *memCgroup) remove() error {
	if err := os.Remove(cg.dir); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove %s: %w", cg.dir, err)
	}
	return nil
}
