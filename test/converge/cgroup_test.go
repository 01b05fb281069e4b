package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMemoryCgroupPath(t *testing.T) {
	tests := []struct {
		name, self string
		want       string
		v2         bool
		wantErr    bool
	}{
		{name: "v1 memory hierarchy, as on this machine",
			self: "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n", want: "/process_api/abc"},
		{name: "v1 memory joined with another controller", self: "5:cpuacct,memory:/x\n", want: "/x"},
		{name: "unified only", self: "0::/kubepods/pod1/c1\n", want: "/kubepods/pod1/c1", v2: true},
		{name: "no memory controller and no unified line", self: "1:cpu:/\n", wantErr: true},
		{name: "empty", self: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, v2, err := memoryCgroupPath(tt.self)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			if got != tt.want || v2 != tt.v2 {
				t.Errorf("memoryCgroupPath() = %q, v2 %v; want %q, v2 %v", got, v2, tt.want, tt.v2)
			}
		})
	}
}

func TestOOMKillCount(t *testing.T) {
	tests := []struct {
		name, text string
		want       int
	}{
		{name: "v1 memory.oom_control", text: "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", want: 2},
		{name: "v2 memory.events", text: "low 0\nhigh 0\nmax 14\noom 1\noom_kill 1\noom_group_kill 0\n", want: 1},
		{name: "none yet", text: "oom_kill_disable 0\nunder_oom 0\n", want: 0},
		{name: "oom_kill_disable is not oom_kill", text: "oom_kill_disable 1\n", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := oomKillCount(tt.text); got != tt.want {
				t.Errorf("oomKillCount() = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestMemCgroupHoldsTheProcess runs a command wrapped into a memory cgroup
// and checks, from the command's own /proc/self/cgroup, that it ran
// there, with its arguments intact. It is skipped where no cgroup can be
// made (no writable cgroup hierarchy).
func TestMemCgroupHoldsTheProcess(t *testing.T) {
	cg, err := newMemCgroup(64 << 20)
	if err != nil {
		t.Skipf("no memory cgroup here: %v", err)
	}
	cmd := exec.Command("/bin/sh", "-c", `cat /proc/self/cgroup; echo "args: $*"`, "sh", "a b", "c")
	cg.wrap(cmd)
	out, err := cmd.CombinedOutput()
	if n, err := cg.oomKills(); err != nil || n != 0 {
		t.Errorf("oom kills = %d, %v; want 0", n, err)
	}
	if rmErr := cg.remove(); rmErr != nil {
		t.Error(rmErr)
	}
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), filepath.Base(cg.dir)) {
		t.Errorf("the command ran outside %s:\n%s", cg.dir, out)
	}
	if !strings.Contains(string(out), "args: a b c") {
		t.Errorf("the command's arguments changed:\n%s", out)
	}
}
