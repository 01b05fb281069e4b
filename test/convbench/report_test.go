package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name string
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{"none", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of odd, unsorted", ms(5, 1, 3), 0.5, 3 * time.Millisecond},
		{"median of even: the lower", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p99 of 100", ms(func() []int {
			var s []int
			for i := 100; i >= 1; i-- {
				s = append(s, i)
			}
			return s
		}()...), 0.99, 99 * time.Millisecond},
		{"max", ms(2, 9, 4), 1, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quantile(tt.ds, tt.q); got != tt.want {
				t.Errorf("quantile(%v, %g) = %v, want %v", tt.ds, tt.q, got, tt.want)
			}
		})
	}
}

func TestReportVerdict(t *testing.T) {
	o, err := parseFlags(flag.NewFlagSet("convbench", flag.ContinueOnError), []string{"-kubeconfig", "k"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		storage, webhook time.Duration
		want             string
	}{
		{"within the goal", 20 * time.Millisecond, 30 * time.Millisecond, "1.500 (goal ≤ 2) PASS"},
		{"over it", 20 * time.Millisecond, 50 * time.Millisecond, "2.500 (goal ≤ 2) MISS"},
		{"nothing measured", 0, 0, "0.000 (goal ≤ 2) MISS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &result{storageVersion: "v1alpha1", webhookVersion: "v1", parents: 1000, reviews: []time.Duration{time.Millisecond}}
			if tt.storage > 0 {
				r.storage, r.webhook = []time.Duration{tt.storage}, []time.Duration{tt.webhook}
			}
			var b bytes.Buffer
			r.write(&b, o)
			if !strings.Contains(b.String(), tt.want) {
				t.Errorf("report:\n%s\nwant a line ending %q", b.String(), tt.want)
			}
			if got, want := r.pass(o), strings.HasSuffix(tt.want, "PASS"); got != want {
				t.Errorf("pass = %v, want %v", got, want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{"defaults", []string{"-kubeconfig", "k"}, ""},
		{"no kubeconfig", []string{"-kubeconfig", ""}, "-kubeconfig"},
		{"fewer parents than a review", []string{"-kubeconfig", "k", "-parents", "10"}, "-parents 10"},
		{"no rounds", []string{"-kubeconfig", "k", "-rounds", "0"}, "-rounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(flag.NewFlagSet("convbench", flag.ContinueOnError), tt.args)
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("parseFlags(%v) = %v, want an error containing %q", tt.args, err, tt.err)
			}
		})
	}
}
