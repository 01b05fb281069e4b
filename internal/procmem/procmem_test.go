package procmem

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	const head = "Name:\tloom\nState:\tS (sleeping)\nVmPeak:\t 1300000 kB\n"
	tests := []struct {
		name    string
		status  string
		want    Status
		wantErr string
	}{
		{"all four", head + "VmHWM:\t   61440 kB\nVmRSS:\t   40960 kB\nRssAnon:\t   30000 kB\nRssFile:\t   10960 kB\n",
			Status{RSS: 40960 << 10, HWM: 61440 << 10, Anon: 30000 << 10, File: 10960 << 10}, ""},
		{"no RssAnon (old kernel)", head + "VmHWM:\t 2 kB\nVmRSS:\t 1 kB\n", Status{RSS: 1 << 10, HWM: 2 << 10}, ""},
		{"kernel thread", "Name:\tkthreadd\nState:\tS (sleeping)\n", Status{}, "no VmRSS or VmHWM"},
		{"only VmRSS", head + "VmRSS:\t 100 kB\n", Status{}, "no VmRSS or VmHWM"},
		{"garbage", head + "VmHWM:\t lots kB\nVmRSS:\t 1 kB\n", Status{}, "parse VmHWM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.status))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
