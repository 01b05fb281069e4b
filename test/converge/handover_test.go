package main

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/shard"
)

func TestHeldBy(t *testing.T) {
	var table shard.Table
	for b := range table {
		switch {
		case b < 22:
			table[b] = "converge-1-abcde"
		case b < 43:
			table[b] = "converge-10-fghjk"
		case b < 60:
			table[b] = "converge-2-lmnpq"
		}
	}
	tests := []struct {
		prefix string
		want   string
	}{
		{prefix: "converge-1", want: "0-21"},
		{prefix: "converge-10", want: "22-42"},
		{prefix: "converge-2", want: "43-59"},
		{prefix: "converge-3", want: ""},
		{prefix: "converge", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			if got := heldBy(table, tt.prefix).String(); got != tt.want {
				t.Errorf("heldBy(%s) = %q, want %q", tt.prefix, got, tt.want)
			}
		})
	}
}

func TestMovedParents(t *testing.T) {
	var parents []parentRef
	var held shard.Set
	for i := range 200 {
		p := parentRef{name: fmt.Sprintf("p-%04d", i), uid: types.UID(fmt.Sprintf("%08x-3c1e-4b5a-9f0e-%012x", i*2654435761, i))}
		parents = append(parents, p)
		if i%3 == 0 {
			held = held.Add(shard.Bucket(p.uid))
		}
	}
	var in []string
	for _, p := range parents {
		if held.Has(shard.Bucket(p.uid)) {
			in = append(in, p.name)
		}
	}
	if len(in) == len(parents) {
		t.Fatalf("every parent is in %s: the test needs some outside", held)
	}
	tests := []struct {
		name  string
		limit int
		want  []string
	}{
		{name: "all", limit: 0, want: in},
		{name: "a limit above them is all", limit: len(in) + 1, want: in},
		{name: "spread over them", limit: 4, want: []string{in[0], in[len(in)/4], in[2*len(in)/4], in[3*len(in)/4]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			moved, edit := movedParents(parents, held, tt.limit)
			if moved != len(in) {
				t.Errorf("moved = %d, want %d", moved, len(in))
			}
			if diff := cmp.Diff(tt.want, edit); diff != "" {
				t.Errorf("edited (-want +got)\n%s", diff)
			}
		})
	}
}

func TestHandoverTarget(t *testing.T) {
	tests := []struct {
		sig   syscall.Signal
		lease time.Duration
		want  time.Duration
	}{
		{sig: syscall.SIGTERM, lease: 6 * time.Second, want: 5 * time.Second},
		{sig: syscall.SIGKILL, lease: 6 * time.Second, want: 11 * time.Second},
		{sig: syscall.SIGKILL, lease: 15 * time.Second, want: 20 * time.Second},
	}
	for _, tt := range tests {
		if got := handoverTarget(tt.sig, tt.lease); got != tt.want {
			t.Errorf("handoverTarget(%s, %s) = %s, want %s", sigName(tt.sig), tt.lease, got, tt.want)
		}
	}
}

func TestShardLease(t *testing.T) {
	tests := []struct {
		args    string
		want    time.Duration
		wantErr bool
	}{
		{args: "", want: 6 * time.Second},
		{args: "--shard-lease-duration 10s", want: 10 * time.Second},
		{args: "--shard-lease-duration=3s --workers 2", want: 3 * time.Second},
		{args: "--shard-lease-duration=ten", wantErr: true},
	}
	for _, tt := range tests {
		got, err := shardLease(strings.Fields(tt.args))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("shardLease(%q) = %s, %v; want %s, error %v", tt.args, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestTakeoverReport(t *testing.T) {
	term := takeover{signal: "SIGTERM", replica: 1, buckets: 22, moved: 100, edited: 100, target: 5 * time.Second,
		sent: 1500 * time.Millisecond, exited: 200 * time.Millisecond, took: 3 * time.Second, complete: true, landed: 100,
		writes: requests{Children: 100, Status: 100}, applied: 100, rejoin: 4 * time.Second, rejoined: true}
	kill := takeover{signal: "SIGKILL", replica: 1, buckets: 21, moved: 90, edited: 90, target: 11 * time.Second,
		sent: 1500 * time.Millisecond, took: 2 * time.Minute, landed: 80,
		writes: requests{Children: 95, Status: 80}, applied: 95, rejoin: 4 * time.Second, rejoined: true, rejoinWrites: requests{Children: 3}, rejoinApplied: 3}
	results := []phaseResult{{label: "loom/3#1", takeovers: []takeover{term, kill}}}
	rows := takeoverRows(results)
	want := []targetRow{
		{what: "SIGTERM handover, from the signal", target: "≤ 5.00s", measured: "3.00s (100 parents edited)", verdict: "PASS"},
		{what: "SIGKILL handover, from the signal", target: "≤ 11.00s", measured: "only 80 of 90 by 120.00s", verdict: "MISS"},
		{what: "child writes per takeover beyond the edited", target: "0", measured: "5 (rejoin: 3)", verdict: "MISS"},
	}
	if diff := cmp.Diff(want, rows, cmp.AllowUnexported(targetRow{})); diff != "" {
		t.Errorf("takeoverRows (-want +got)\n%s", diff)
	}
	var buf bytes.Buffer
	reportTakeovers(&buf, results)
	for _, s := range []string{"SIGTERM", "PASS", "80 of 90 by 120.00s", "MISS", "+5", "100+100", "0+0", "3+0"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, buf.String())
		}
	}
}
