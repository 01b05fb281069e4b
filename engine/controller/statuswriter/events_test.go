package statuswriter

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/record"
)

func TestRecordTransitions(t *testing.T) {
	st := func(ready, degraded, reason string) string {
		return fmt.Sprintf(`{conditions: [{type: Ready, status: %q, message: m}, {type: Degraded, status: %q, reason: %q, message: why}]}`,
			ready, degraded, reason)
	}
	tests := []struct {
		name      string
		old, want string
		events    []string
	}{
		{"became ready", st("False", "False", ""), st("True", "False", ""), []string{"Normal Ready m"}},
		{"still ready: nothing", st("True", "False", ""), st("True", "False", ""), nil},
		{"no longer ready", st("True", "False", ""), st("False", "False", ""), []string{"Normal NotReady m"}},
		{"became degraded", st("True", "False", ""), st("False", "True", "RenderFailed"),
			[]string{"Warning RenderFailed why"}},
		{"still degraded, same reason: nothing", st("False", "True", "RenderFailed"), st("False", "True", "RenderFailed"), nil},
		{"degraded for another reason", st("False", "True", "RenderFailed"), st("False", "True", "ApplyFailed"),
			[]string{"Warning ApplyFailed why"}},
		{"recovered", st("False", "True", "RenderFailed"), st("True", "False", ""),
			[]string{"Normal Ready m", "Normal Recovered no longer degraded: RenderFailed resolved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			w := New(Config{Recorder: rec})
			prev := u(t, parentYAML)
			prev.Object["status"] = u(t, tt.old).Object
			w.recordTransitions(prev, prev, u(t, tt.want).Object)
			close(rec.Events)
			var got []string
			for ev := range rec.Events {
				got = append(got, ev)
			}
			if diff := cmp.Diff(tt.events, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
