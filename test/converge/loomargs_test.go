package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReplicaArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		i       int
		sharded bool
		want    string
	}{
		{name: "a later replica's webhook given is moved", args: "--webhook-bind-address 127.0.0.1:9500", i: 2, sharded: true,
			want: "--webhook-bind-address=127.0.0.1:9502 --metrics-bind-address=:8082 --sharded --shard-id-prefix=converge-3 --shard-namespace=loom-system"},
		{name: "one unsharded replica runs as -loom-args say", args: "--workers 4 --metrics-bind-address :9000", want: "--workers 4 --metrics-bind-address :9000"},
		{name: "no args, one replica", args: "", want: ""},
		{name: "first sharded replica keeps its ports", args: "--workers 4", sharded: true, want: "--workers 4 --sharded --shard-id-prefix=converge-1 --shard-namespace=loom-system"},
		{name: "later replica: default metrics port moved", args: "--workers 4", i: 2, sharded: true, want: "--workers 4 --metrics-bind-address=:8082 --webhook-bind-address=:9445 --sharded --shard-id-prefix=converge-3 --shard-namespace=loom-system"},
		{name: "later replica: every bind address moved, both forms", args: "--metrics-bind-address 127.0.0.1:9000 --pprof-bind-address=:6060", i: 1, sharded: true,
			want: "--metrics-bind-address=127.0.0.1:9001 --pprof-bind-address=:6061 --webhook-bind-address=:9444 --sharded --shard-id-prefix=converge-2 --shard-namespace=loom-system"},
		{name: "an address without a fixed port stays", args: "--pprof-bind-address= --metrics-bind-address=:9000", i: 1, sharded: true,
			want: "--pprof-bind-address= --metrics-bind-address=:9001 --webhook-bind-address=:9444 --sharded --shard-id-prefix=converge-2 --shard-namespace=loom-system"},
		{name: "--sharded given is not repeated", args: "--sharded --shard-group g", i: 1, sharded: true, want: "--sharded --shard-group g --metrics-bind-address=:8081 --webhook-bind-address=:9444 --shard-id-prefix=converge-2 --shard-namespace=loom-system"},
		{name: "--shard-id-prefix given is kept", args: "--shard-id-prefix p", i: 1, sharded: true, want: "--shard-id-prefix p --metrics-bind-address=:8081 --webhook-bind-address=:9444 --sharded --shard-namespace=loom-system"},
		{name: "--sharded=false given: the phase's own is appended", args: "--sharded=false", sharded: true, want: "--sharded=false --sharded --shard-id-prefix=converge-1 --shard-namespace=loom-system"},
		{name: "a value that looks like a bind flag is a value", args: "--namespace pprof-bind-address=:1", i: 1, want: "--namespace pprof-bind-address=:1 --metrics-bind-address=:8081 --webhook-bind-address=:9444"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(replicaArgs(strings.Fields(tt.args), tt.i, tt.sharded), " ")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestShiftPort(t *testing.T) {
	for addr, want := range map[string]string{
		":8080":          ":8082",
		"127.0.0.1:9000": "127.0.0.1:9002",
		"[::1]:9000":     "[::1]:9002",
		":0":             ":0",
		"":               "",
		"localhost":      "localhost",
	} {
		if got := shiftPort(addr, 2); got != want {
			t.Errorf("shiftPort(%q, 2) = %q, want %q", addr, got, want)
		}
	}
}

func TestFlagValues(t *testing.T) {
	args := strings.Fields("--shard-namespace a --sharded --shard-namespace=b --workers 2 shard-namespace=c")
	if v, given := flagValue(args, "shard-namespace"); v != "b" || !given {
		t.Errorf("flagValue = %q, %v; want b, true (the last given)", v, given)
	}
	if v, given := flagValue(args, "shard-group"); v != "" || given {
		t.Errorf("flagValue of an absent flag = %q, %v", v, given)
	}
	for in, want := range map[string]bool{
		"--sharded": true, "-sharded": true, "--sharded=true": true, "--sharded --sharded=false": false,
		"--sharded-extra": false, "sharded": false, "": false,
	} {
		if got := boolFlag(strings.Fields(in), "sharded"); got != want {
			t.Errorf("boolFlag(%q) = %v, want %v", in, got, want)
		}
	}
}
