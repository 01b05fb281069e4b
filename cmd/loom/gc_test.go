package main

import (
	"os"
	"runtime/debug"
	"testing"

	"k8s.io/klog/v2"
)

func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tests := []struct {
		name string
		env  string // "" means unset
		want int
	}{
		{"unset: Loom's default", "", defaultGCPercent},
		{"set by the user: kept", "80", 80},
		{"off: kept", "off", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOGC", tt.env)
			if tt.env == "" {
				if err := os.Unsetenv("GOGC"); err != nil {
					t.Fatal(err)
				}
				debug.SetGCPercent(100)
			} else {
				debug.SetGCPercent(tt.want) // what the runtime read from GOGC at start
			}
			setGCPercent(klog.Background())
			if got := debug.SetGCPercent(100); got != tt.want {
				t.Errorf("GOGC = %d, want %d", got, tt.want)
			}
		})
	}
}
