package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine describes the computer a run measured, for the report's head:
// CPUs (as nproc counts them), CPU model, total memory, and the date.
func machine(now time.Time) string {
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	meminfo, _ := os.ReadFile("/proc/meminfo")
	model := procField(string(cpuinfo), "model name")
	if model == "" {
		model = "unknown CPU"
	}
	mem := "unknown memory"
	if kb, err := strconv.ParseInt(strings.TrimSuffix(procField(string(meminfo), "MemTotal"), " kB"), 10, 64); err == nil {
		mem = fmt.Sprintf("%.1f GiB memory", float64(kb)/(1<<20))
	}
	return fmt.Sprintf("machine: %d CPUs (nproc), %s, %s; %s", runtime.NumCPU(), model, mem, now.UTC().Format("2006-01-02 15:04 MST"))
}

// procField is the value of the first "name: value" line of a /proc file
// such as /proc/cpuinfo or /proc/meminfo, trimmed; "" if there is none.
func procField(text, name string) string {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
