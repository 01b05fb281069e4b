package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
)

// With --log-format json every line Loom logs, through the context's
// logger, klog's global functions or log/slog, is one JSON object with
// time, level, msg and the line's keys; V(n) lines follow -v.
func TestLogFormatJSON(t *testing.T) {
	tests := []struct {
		name      string
		verbosity int
		log       func()
		want      map[string]any // keys to compare; "time" is only checked to be there
	}{
		{name: "the context's logger", log: func() {
			ctx := klog.NewContext(t.Context(), klog.Background().WithValues("kind", "MyResource"))
			klog.FromContext(ctx).Info("Reconciled", "parent", klog.KRef("shop", "web"), "retries", 2)
		}, want: map[string]any{"level": "INFO", "msg": "Reconciled", "kind": "MyResource", "parent": map[string]any{"namespace": "shop", "name": "web"}, "retries": 2.0}},
		{name: "an error", log: func() {
			klog.Background().Error(errors.New("apply Deployment shop/web: conflict"), "Reconcile failed; will retry")
		}, want: map[string]any{"level": "ERROR", "msg": "Reconcile failed; will retry", "err": "apply Deployment shop/web: conflict"}},
		{name: "klog's global function", log: func() { klog.InfoS("Serving metrics", "address", ":8080") },
			want: map[string]any{"level": "INFO", "msg": "Serving metrics", "address": ":8080"}},
		{name: "log/slog, as Helm's SDK warns", log: func() { slog.Warn("chart warning", "chart", "web") },
			want: map[string]any{"level": "WARN", "msg": "chart warning", "chart": "web"}},
		{name: "V(4) at -v 0 is not written", log: func() { klog.Background().V(4).Info("Reconciled") }},
		{name: "V(4) at -v 4", verbosity: 4, log: func() { klog.Background().V(4).Info("Reconciled") },
			want: map[string]any{"level": "DEBUG", "msg": "Reconciled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			restore := keepLogging()
			defer restore()
			if err := setLogFormat("json", tt.verbosity, &buf); err != nil {
				t.Fatal(err)
			}
			tt.log()
			klog.Flush()
			out := strings.TrimSpace(buf.String())
			if tt.want == nil {
				if out != "" {
					t.Errorf("logged %q, want nothing", out)
				}
				return
			}
			if n := strings.Count(out, "\n"); n != 0 {
				t.Fatalf("logged %d lines, want 1:\n%s", n+1, out)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if _, ok := got["time"]; !ok {
				t.Errorf("no time in %s", out)
			}
			for k := range got {
				if _, ok := tt.want[k]; !ok {
					delete(got, k)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("log line (-want +got):\n%s\nline: %s", diff, out)
			}
		})
	}
}

func TestLogFormatRefusesOthers(t *testing.T) {
	restore := keepLogging()
	defer restore()
	for _, f := range []string{"text", ""} {
		if err := setLogFormat(f, 0, nil); err != nil {
			t.Errorf("setLogFormat(%q): %v", f, err)
		}
	}
	if err := setLogFormat("yaml", 0, nil); err == nil || !strings.Contains(err.Error(), `"yaml"`) {
		t.Errorf("setLogFormat(yaml) = %v, want an error naming it", err)
	}
}

// keepLogging returns a func that puts klog's and slog's loggers back.
func keepLogging() func() {
	def := slog.Default()
	return func() {
		klog.ClearLogger()
		slog.SetDefault(def)
	}
}
