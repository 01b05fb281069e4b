package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// userHZ is the unit of the CPU times in /proc: clock ticks, which Linux
// reports at 100 per second on every architecture Go supports.
const userHZ = 100

// clusterProcesses are the local cluster's processes, by the names of
// their pid files in .cluster/pids.
var clusterProcesses = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"}

// cpuSample is the CPU time used so far by each watched process and by the
// whole machine, in seconds.
type cpuSample struct {
	proc         map[string]float64
	machineBusy  float64
	machineTotal float64
	// machineSteal is time the hypervisor gave to others (in busy).
	machineSteal float64
	unavailable  bool
}

// cpuSampler reads CPU times from /proc. The cluster's pids come from its
// pid files (a component that is not running has none); "converge" is this
// process (the harness, and Loom in an in-process loom phase); "loom" is
// Loom's processes (every replica's, added up) while a process-mode loom
// phase runs.
type cpuSampler struct {
	mu   sync.Mutex
	pids map[string][]int
}

// watch adds a process to the samples, under name: the CPU of every
// process watched under one name is added up.
func (s *cpuSampler) watch(name string, pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pids[name] = append(s.pids[name], pid)
}

// unwatch removes the processes of name from the samples.
func (s *cpuSampler) unwatch(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pids, name)
}

func newCPUSampler(clusterDir string) *cpuSampler {
	s := &cpuSampler{pids: map[string][]int{"converge": {os.Getpid()}}}
	for _, name := range clusterProcesses {
		b, err := os.ReadFile(filepath.Join(clusterDir, "pids", name+".pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			s.pids[name] = []int{pid}
		}
	}
	return s
}

func (s *cpuSampler) sample() cpuSample {
	out := cpuSample{proc: map[string]float64{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, pids := range s.pids {
		sum, found := 0.0, false
		for _, pid := range pids {
			if t, ok := processCPU(pid); ok {
				sum, found = sum+t, true
			}
		}
		if found {
			out.proc[name] = sum
		}
	}
	busy, total, steal, ok := machineCPU()
	out.machineBusy, out.machineTotal, out.machineSteal, out.unavailable = busy, total, steal, !ok
	return out
}

// sub returns the CPU used between b and s.
func (s cpuSample) sub(b cpuSample) cpuSample {
	out := cpuSample{proc: map[string]float64{}, unavailable: s.unavailable || b.unavailable}
	for k, v := range s.proc {
		if w, ok := b.proc[k]; ok {
			out.proc[k] = v - w
		}
	}
	out.machineBusy, out.machineTotal = s.machineBusy-b.machineBusy, s.machineTotal-b.machineTotal
	out.machineSteal = s.machineSteal - b.machineSteal
	return out
}

// processCPU reads utime+stime of a process (and its reaped children are
// left out: the cluster's processes do not fork workers).
func processCPU(pid int) (float64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces; fields follow it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (u + st) / userHZ, true
}

// machineCPU reads the busy, total and stolen CPU time of the whole machine
// from the first line of /proc/stat.
func machineCPU() (busy, total, steal float64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0, false
	}
	// user nice system idle iowait irq softirq steal [guest guest_nice];
	// guest time is already counted in user.
	var idle float64
	for i, v := range f[1:9] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, 0, 0, false
		}
		total += n
		switch i {
		case 3, 4:
			idle += n
		case 7:
			steal = n
		}
	}
	return (total - idle) / userHZ, total / userHZ, steal / userHZ, true
}

// waitQuiet waits, up to limit, until the machine has been mostly idle
// (under a quarter busy) for three seconds in a row, so that a phase does
// not start while the last one's deletion, or someone else's test, still
// keeps the CPUs busy. It reports how busy the machine was if it never
// became quiet, and carries on.
func waitQuiet(ctx context.Context, limit time.Duration) {
	if limit <= 0 {
		return
	}
	start := time.Now()
	quiet := 0
	busy0, total0, _, ok := machineCPU()
	for ok && time.Since(start) < limit {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		busy1, total1, _, ok1 := machineCPU()
		if !ok1 {
			return
		}
		frac := (busy1 - busy0) / max(total1-total0, 1e-9)
		busy0, total0 = busy1, total1
		if frac >= 0.25 {
			quiet = 0
			continue
		}
		if quiet++; quiet == 3 {
			return
		}
	}
	if ok && ctx.Err() == nil {
		logf("the machine did not become quiet within %s; starting anyway", limit)
	}
}
