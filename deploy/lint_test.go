package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"

	"github.com/loom-operator/loom/internal/testutil"
)

// TestLint runs `helm lint`'s rules (Helm 4's SDK) on the chart, with the
// default values and with every option on, and fails on any warning or
// error; the broken copies show that the check can fail.
func TestLint(t *testing.T) {
	tests := []struct {
		name   string
		values string
		// edit breaks a copy of the chart: file, old text, new text.
		edit     [3]string
		wantFail string
	}{
		{name: "default values", values: "{}"},
		{name: "every option on", values: allOnValues},
		{name: "sharded", values: "{replicas: 3, sharding: {enabled: true, leaseDuration: 10s, renewInterval: 3s}}"},
		{name: "a value the schema refuses", values: "{logFormat: xml}", wantFail: "logFormat"},
		{name: "a template that is not YAML", values: "{}",
			edit:     [3]string{"templates/service.yaml", "  type: {{", "  type: [{{"},
			wantFail: "service.yaml"},
		{name: "a name that is not a DNS name", values: "{}",
			edit:     [3]string{"templates/pdb.yaml", `name: {{ include "loom.fullname" . }}`, `name: {{ include "loom.fullname" . }}_pdb`},
			wantFail: "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := ChartDir()
			if tt.edit[0] != "" {
				dir = filepath.Join(t.TempDir(), "loom")
				if err := os.CopyFS(dir, os.DirFS(ChartDir())); err != nil {
					t.Fatal(err)
				}
				testutil.EditFile(t, filepath.Join(dir, tt.edit[0]), tt.edit[1], tt.edit[2])
			}
			res := lint.RunAll(dir, readValues(t, tt.values), "loom-system")
			var problems []string
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev {
					problems = append(problems, m.Error())
				}
			}
			got := strings.Join(problems, "\n")
			switch {
			case tt.wantFail == "" && got != "":
				t.Errorf("helm lint:\n%s", got)
			case tt.wantFail != "" && !strings.Contains(got, tt.wantFail):
				t.Errorf("helm lint found %q, want a problem naming %q", got, tt.wantFail)
			}
		})
	}
}
