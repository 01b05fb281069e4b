package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlags(t *testing.T) {
	t.Setenv(workloadKubeconfigEnv, "") // the remote cases say their own
	tests := []struct {
		name    string
		args    string
		check   func(t *testing.T, o options)
		wantErr string
	}{
		{name: "defaults", args: "", check: func(t *testing.T, o options) {
			got := []any{o.loomMode, o.loomBin, len(o.loomArgs), o.metricsAddr, o.targetRSS, o.target, o.targetReady, o.steady, o.bare, o.loomReplicas, o.targetShardRSS, o.idle, o.targetIdleRSS, o.floor, o.targetRemoteTime, o.targetRemoteRSS, o.remoteTemplates}
			want := []any{"process", "bin/loom", 0, ":8080", 60.0, 1.1, 1.15, 15 * time.Second, false, 1, 1.15, 20 * time.Second, 35.0, "./test/converge/floor", 1.3, 1.3, "test/converge/testdata/remote"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			wantPhases := []phaseSpec{
				{kind: "base", text: "base", parents: 1000},
				{kind: "loom", text: "loom", parents: 1000, replicas: 1},
				{kind: "base", text: "base", parents: 1000},
			}
			if diff := cmp.Diff(wantPhases, o.phases, cmp.AllowUnexported(phaseSpec{})); diff != "" {
				t.Errorf("phases (-want +got)\n%s", diff)
			}
		}},
		{name: "loom replicas are sharded", args: "-loom-replicas 3 -phases base,loom -parents 50", check: func(t *testing.T, o options) {
			want := []phaseSpec{
				{kind: "base", text: "base", parents: 50},
				{kind: "loom", text: "loom", parents: 50, replicas: 3, sharded: true},
			}
			if diff := cmp.Diff(want, o.phases, cmp.AllowUnexported(phaseSpec{})); diff != "" {
				t.Errorf("phases (-want +got)\n%s", diff)
			}
		}},
		{name: "phases with their own parents and replicas", args: "-phases loom@200,loom/3@600,base@10,loom/1", check: func(t *testing.T, o options) {
			want := []phaseSpec{
				{kind: "loom", text: "loom@200", parents: 200, replicas: 1},
				{kind: "loom", text: "loom/3@600", parents: 600, replicas: 3, sharded: true},
				{kind: "base", text: "base@10", parents: 10},
				{kind: "loom", text: "loom/1", parents: 1000, replicas: 1},
			}
			if diff := cmp.Diff(want, o.phases, cmp.AllowUnexported(phaseSpec{})); diff != "" {
				t.Errorf("phases (-want +got)\n%s", diff)
			}
		}},
		{name: "one replica sharded by loom args", args: "-loom-args=--sharded --shard-group=bench", check: func(t *testing.T, o options) {
			if s := o.phases[1]; s.replicas != 1 || !s.sharded {
				t.Errorf("loom phase: replicas %d, sharded %v; want 1, true", s.replicas, s.sharded)
			}
		}},
		{name: "replica ports must not meet", args: "-loom-replicas 3 -loom-args=--metrics-bind-address=:9000 --pprof-bind-address=:9002", wantErr: "replica 1's --pprof-bind-address and replica 3's --metrics-bind-address would both listen on port 9002"},
		{name: "replicas need a process", args: "-loom-mode inprocess -phases loom/2", wantErr: "only process mode runs replicas"},
		{name: "no replicas", args: "-loom-replicas 0", wantErr: "-loom-replicas must be at least 1"},
		{name: "zero replicas in a phase", args: "-phases loom/0", wantErr: `phase "loom/0": /0 is not a number of replicas`},
		{name: "base has no replicas", args: "-phases base/2", wantErr: "/REPLICAS is for loom and remote phases only"},
		{name: "parents not a number", args: "-phases loom@many", wantErr: `phase "loom@many": @many is not a number of parents`},
		{name: "replicas after parents", args: "-phases loom@10/3", wantErr: `@10/3 is not a number of parents`},
		{name: "defaults, bench-scale's", args: "-bare -parents 10000 -phases base,loom", check: func(t *testing.T, o options) {
			got := maxReplicas(o.phases)
			if got != 1 || o.phases[1].sharded {
				t.Errorf("maxReplicas %d, sharded %v; want 1, false", got, o.phases[1].sharded)
			}
		}},
		{name: "loom args split on spaces", args: "-loom-args=--workers 4  --metrics-bind-address=127.0.0.1:9090", check: func(t *testing.T, o options) {
			if diff := cmp.Diff([]string{"--workers", "4", "--metrics-bind-address=127.0.0.1:9090"}, o.loomArgs); diff != "" {
				t.Errorf("loomArgs (-want +got)\n%s", diff)
			}
			if o.metricsAddr != "127.0.0.1:9090" {
				t.Errorf("metricsAddr = %q", o.metricsAddr)
			}
		}},
		{name: "bare raises the t1 target", args: "-bare -parents 10000 -phases base,loom -target-rss 150", check: func(t *testing.T, o options) {
			if !o.bare || o.target != 1.2 || o.targetRSS != 150 || o.parents != 10000 {
				t.Errorf("bare %v, target %v, target-rss %v, parents %d; want true, 1.2, 150, 10000", o.bare, o.target, o.targetRSS, o.parents)
			}
		}},
		{name: "bare keeps an explicit target", args: "-bare -target 1.3", check: func(t *testing.T, o options) {
			if o.target != 1.3 {
				t.Errorf("target = %v, want 1.3", o.target)
			}
		}},
		{name: "profiles in process", args: "-loom-mode inprocess -cpuprofile cpu.out -memprofile mem.out", check: func(t *testing.T, o options) {
			if o.loomMode != modeInProcess || o.cpuprofile != "cpu.out" {
				t.Errorf("mode %q, cpuprofile %q", o.loomMode, o.cpuprofile)
			}
		}},
		{name: "profiles need inprocess", args: "-cpuprofile cpu.out", wantErr: "need -loom-mode inprocess"},
		{name: "unknown mode", args: "-loom-mode docker", wantErr: `-loom-mode: unknown mode "docker"`},
		{name: "loom args need a process", args: "-loom-mode inprocess -loom-args=--workers=2", wantErr: "only process mode runs loom run"},
		{name: "memory limit needs a process", args: "-loom-mode inprocess -loom-memory-limit 120", wantErr: "only process mode runs loom run in a cgroup"},
		{name: "negative memory limit", args: "-loom-memory-limit -1", wantErr: "want MiB > 0"},
		{name: "metrics disabled", args: "-loom-args=--metrics-bind-address=", wantErr: "do not disable --metrics-bind-address"},
		{name: "unknown phase", args: "-phases base,kro", wantErr: `unknown phase "kro"`},
		{name: "unknown phase with parents", args: "-phases kro@5", wantErr: `unknown phase "kro@5"`},
		{name: "stray argument", args: "loom", wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("converge", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			args := strings.Fields(tt.args)
			if before, loomArgs, ok := strings.Cut(tt.args, "-loom-args="); ok {
				// -loom-args comes last: one argument, spaces and all.
				args = append(strings.Fields(before), "-loom-args="+loomArgs)
			}
			o, err := parseFlags(fs, args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

func TestMetricsAddress(t *testing.T) {
	tests := []struct {
		name, args, want, wantURL, wantErr string
	}{
		{name: "default", args: "", want: ":8080", wantURL: "http://127.0.0.1:8080/metrics"},
		{name: "separate value", args: "--metrics-bind-address 127.0.0.2:9000", want: "127.0.0.2:9000", wantURL: "http://127.0.0.2:9000/metrics"},
		{name: "equals, last wins", args: "--metrics-bind-address=:9000 --workers 2 --metrics-bind-address=0.0.0.0:9100", want: "0.0.0.0:9100", wantURL: "http://127.0.0.1:9100/metrics"},
		{name: "a value that looks like the flag is not it", args: "--namespace metrics-bind-address=:1", want: ":8080", wantURL: "http://127.0.0.1:8080/metrics"},
		{name: "no port", args: "--metrics-bind-address localhost", wantErr: "not host:port"},
		{name: "any port", args: "--metrics-bind-address :0", wantErr: "with a fixed port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := metricsAddress(strings.Fields(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tt.want, tt.wantURL}, []string{got, metricsURL(got)}); diff != "" {
				t.Errorf("address, URL (-want +got)\n%s", diff)
			}
		})
	}
}
