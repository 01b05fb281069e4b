package statuswriter

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/controller/metrics"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
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

func TestRecordDriftNamesChildAndField(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	w := New(Config{Recorder: rec, GVK: schema.GroupVersionKind{Kind: "MyResource"}, DriftRepairs: metrics.New(nil).DriftRepairs})
	ref := object.Ref{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Namespace: "ns", Name: "web"}
	w.RecordDrift(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())), u(t, parentYAML), object.ChangeSet{
		{Ref: ref, Action: object.Configured, Drift: []string{"spec.replicas"}},
		{Ref: ref, Action: object.Configured}, // a spec or template change
		{Ref: ref, Action: object.Unchanged},
	})
	close(rec.Events)
	var got []string
	for ev := range rec.Events {
		got = append(got, ev)
	}
	want := []string{"Warning DriftReverted Deployment.apps ns/web was changed by another writer at spec.replicas; Loom changed it back to what the templates render"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
