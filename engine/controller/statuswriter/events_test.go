package statuswriter

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/controller/metrics"
	"github.com/loom-operator/loom/engine/object"
	"github.com/prometheus/client_golang/prometheus/testutil"
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

// A Warning Event, counted, when Drifted becomes True or names other
// fields; none while it stays the same (a restarted Loom finds the
// condition on the parent); a Normal one when it clears. On the old code
// no Drifted Event was recorded.
func TestRecordDrifted(t *testing.T) {
	dr := func(status, msg string) string {
		return fmt.Sprintf(`{conditions: [{type: Drifted, status: %q, message: %q}]}`, status, msg)
	}
	tests := []struct {
		name      string
		old, want string
		events    []string
		counted   float64
	}{
		{"became drifted", `{}`, dr("True", "a at spec.replicas"), []string{"Warning Drifted a at spec.replicas"}, 1},
		{"same drift: nothing", dr("True", "a at spec.replicas"), dr("True", "a at spec.replicas"), nil, 0},
		{"other fields", dr("True", "a at spec.replicas"), dr("True", "a at spec.replicas, data.x"), []string{"Warning Drifted a at spec.replicas, data.x"}, 1},
		{"drift resolved", dr("True", "a at spec.replicas"), dr("False", "none"),
			[]string{"Normal DriftResolved no child has fields changed by another writer any more"}, 0},
		{"still resolved: nothing", dr("False", "none"), dr("False", "none"), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			m := metrics.New(nil)
			w := New(Config{Recorder: rec, GVK: schema.GroupVersionKind{Kind: "MyResource"}, DriftWarnings: m.DriftWarnings})
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
			if n := testutil.ToFloat64(m.DriftWarnings.WithLabelValues("MyResource")); n != tt.counted {
				t.Errorf("loom_drift_warned_total = %v, want %v", n, tt.counted)
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
