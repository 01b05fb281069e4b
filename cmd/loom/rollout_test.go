package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/api/v1alpha1"
)

// testNow is the clock of the tests: resume tokens and step ages.
var testNow = time.Date(2026, 7, 1, 10, 0, 0, 123456789, time.UTC)

// templateSetYAML is a TemplateSet with the given status, as YAML.
func templateSetYAML(name, status string) string {
	return "apiVersion: loom.dev/v1alpha1\nkind: TemplateSet\nmetadata:\n  name: " + name + "\n" + status
}

// fromYAML turns an inline YAML fixture into an unstructured object.
func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return obj
}

// runRollout runs loom rollout with args against client, and returns what
// it printed (stdout, then stderr) and the exit code main would end with.
func runRollout(t *testing.T, client dynamic.Interface, args ...string) (string, string, int) {
	t.Helper()
	o := &rolloutOptions{
		newClient: func(kubeTarget) (dynamic.Interface, error) { return client, nil },
		now:       func() time.Time { return testNow },
		interval:  10 * time.Millisecond,
	}
	cmd := rolloutCommand(o)
	cmd.SilenceUsage = true
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	code := exitCode(cmd.ExecuteC())
	return out.String(), errOut.String(), code
}

const progressing = `status:
  set: templates/myresource
  parentKind: example.loom.dev/v1alpha1/MyResource
  phase: Progressing
  stableRevision: 3f2a9c1b0d
  candidateRevision: 8be01f22aa
  step: 2
  steps: 3
  stepStartedAt: "2026-07-01T09:57:00Z"
  parents: {total: 20, moved: 5, ready: 4}
  message: "step 2 of 3: waiting for ns/p7 to be Ready"
`

func TestRolloutStatus(t *testing.T) {
	tests := []struct {
		name     string
		status   string   // the TemplateSet's status; no object when empty
		args     []string // after "status"; nil: ts
		wantCode int
		want     []string // lines of the output
		wantErr  string   // in stderr
	}{
		{name: "progressing", status: progressing, wantCode: 3, want: []string{
			"TemplateSet ts (set templates/myresource, parents example.loom.dev/v1alpha1/MyResource)",
			"phase:     Progressing",
			"stable:    3f2a9c1b0d",
			"candidate: 8be01f22aa   step 2 of 3, started 3m0s ago",
			"parents:   20 total, 5 moved, 4 ready",
			"message:   step 2 of 3: waiting for ns/p7 to be Ready",
		}},
		{name: "complete", wantCode: 0, status: "status: {phase: Complete, stableRevision: 8be01f22aa, parents: {total: 20}}",
			want: []string{"TemplateSet ts", "phase:     Complete", "stable:    8be01f22aa", "candidate: none", "parents:   20 total, 0 moved, 0 ready"}},
		{name: "paused", wantCode: 3, status: "spec: {paused: true}\nstatus: {phase: Paused, candidateRevision: b, step: 1, steps: 3}",
			want: []string{"phase:     Paused", "candidate: b   step 1 of 3", "paused:    yes (spec.paused; loom rollout resume ts goes on)"}},
		{name: "failed", wantCode: 2, status: "status: {phase: Failed, candidateRevision: b, step: 1, steps: 3, failedParent: ns/p7, message: p7 is Degraded}",
			want: []string{"phase:     Failed", "failed:    ns/p7", "message:   p7 is Degraded"}},
		{name: "rolled back", wantCode: 2, status: "status: {phase: RolledBack, stableRevision: a, rejectedRevision: b}",
			want: []string{"phase:     RolledBack", "candidate: none", "rejected:  b"}},
		{name: "no status yet", wantCode: 3, status: "metadata: {name: ts}",
			want: []string{"phase:     none yet (Loom has not written this TemplateSet's status)"}},
		{name: "unknown phase", wantCode: 1, status: "status: {phase: Sideways}", wantErr: `unknown phase "Sideways"`},
		{name: "not found", wantCode: 1, wantErr: `get templateset/ts: templatesets.loom.dev "ts" not found`},
		{name: "timeout without watch", wantCode: 1, status: progressing, args: []string{"ts", "--timeout", "1m"}, wantErr: "--timeout needs --watch"},
		{name: "no name", wantCode: 1, args: []string{}, wantErr: "accepts 1 arg(s), received 0"},
		{name: "two names", wantCode: 1, args: []string{"ts", "b"}, wantErr: "accepts 1 arg(s), received 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.status != "" {
				objs = append(objs, fromYAML(t, templateSetYAML("ts", tt.status)))
			}
			args := append([]string{"status"}, tt.args...)
			if tt.args == nil {
				args = []string{"status", "ts"}
			}
			out, errOut, code := runRollout(t, fake.NewSimpleDynamicClient(runtime.NewScheme(), objs...), args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.want {
				if !hasLine(out, w) {
					t.Errorf("output lacks the line %q:\n%s", w, out)
				}
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, errOut)
			}
			if tt.wantErr == "" && errOut != "" {
				t.Errorf("stderr: want nothing, got:\n%s", errOut)
			}
		})
	}
}

// hasLine reports whether line is one of out's lines.
func hasLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

func TestRolloutControls(t *testing.T) {
	token := testNow.Format(time.RFC3339Nano)
	tests := []struct {
		name     string
		spec     string // the TemplateSet's spec, YAML
		status   string
		args     []string
		wantSpec map[string]any // of TemplateSet ts, after the command
		patches  int            // sent
		wantOut  string
		wantErr  string
	}{
		{name: "pause", status: progressing, args: []string{"pause", "ts"}, patches: 1,
			wantSpec: map[string]any{"paused": true}, wantOut: "templateset/ts paused\n"},
		{name: "resume clears paused and writes a new token", spec: "spec: {paused: true, resume: old}\n", status: progressing,
			args: []string{"resume", "ts"}, patches: 1,
			wantSpec: map[string]any{"paused": false, "resume": token}, wantOut: "templateset/ts resumed\n"},
		{name: "promote names the candidate", spec: "spec: {paused: true}\n", status: progressing, args: []string{"promote", "ts"}, patches: 1,
			wantSpec: map[string]any{"paused": true, "promote": "8be01f22aa"}, wantOut: "templateset/ts: candidate 8be01f22aa promoted\n"},
		{name: "abort names the candidate", status: progressing, args: []string{"abort", "ts"}, patches: 1,
			wantSpec: map[string]any{"abort": "8be01f22aa"}, wantOut: "templateset/ts: candidate 8be01f22aa aborted\n"},
		{name: "promote without a candidate", spec: "spec: {paused: true}\n", status: "status: {phase: Complete, stableRevision: a}",
			args: []string{"promote", "ts"}, wantSpec: map[string]any{"paused": true},
			wantErr: "templateset/ts: no candidate to promote: phase Complete"},
		{name: "abort without a candidate", status: "status: {phase: RolledBack, rejectedRevision: b}", args: []string{"abort", "ts"},
			wantErr: "templateset/ts: no candidate to abort: phase RolledBack"},
		{name: "pause of a missing TemplateSet", status: progressing, args: []string{"pause", "nope"}, patches: 1,
			wantErr: `pause templateset/nope: templatesets.loom.dev "nope" not found`},
		{name: "promote of a missing TemplateSet", status: progressing, args: []string{"promote", "nope"},
			wantErr: `get templateset/nope: templatesets.loom.dev "nope" not found`},
		{name: "two names", status: progressing, args: []string{"pause", "ts", "nope"},
			wantErr: "accepts 1 arg(s), received 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fromYAML(t, templateSetYAML("ts", tt.spec+tt.status))
			client := fake.NewSimpleDynamicClient(runtime.NewScheme(), before.DeepCopy())
			out, errOut, code := runRollout(t, client, tt.args...)
			wantCode := 0
			if tt.wantErr != "" {
				wantCode = 1
			}
			if code != wantCode || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit code %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, wantCode, tt.wantErr, out, errOut)
			}
			if diff := cmp.Diff(tt.wantOut, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			patches := 0
			for _, a := range client.Actions() {
				if p, ok := a.(clienttesting.PatchAction); ok {
					patches++
					if p.GetPatchType() != types.MergePatchType {
						t.Errorf("patch type %s, want a merge patch", p.GetPatchType())
					}
				}
			}
			if patches != tt.patches {
				t.Errorf("%d patches sent, want %d", patches, tt.patches)
			}
			got, err := client.Resource(v1alpha1.TemplateSetGVR).Get(context.Background(), "ts", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			spec, _, _ := unstructured.NestedMap(got.Object, "spec")
			if diff := cmp.Diff(tt.wantSpec, spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Object["status"], got.Object["status"]); diff != "" {
				t.Errorf("the status changed (-before +after):\n%s", diff)
			}
		})
	}
}

// The status of each later update of the watched TemplateSet.
const (
	step3 = "status: {phase: Progressing, candidateRevision: b, step: 3, steps: 3, parents: {total: 20, moved: 20, ready: 12}, message: step 3 of 3}"
	// step3Again changes only what --watch does not follow.
	step3Again = "status: {phase: Progressing, candidateRevision: b, step: 3, steps: 3, parents: {total: 21, moved: 20, ready: 12}, message: step 3 of 3, stepStartedAt: \"2026-07-01T09:59:00Z\"}"
	complete   = "status: {phase: Complete, stableRevision: b, parents: {total: 20}, message: b is stable}"
	rolledBack = "status: {phase: RolledBack, stableRevision: a, rejectedRevision: b, parents: {total: 20}, message: ns/p7 failed; rolled back}"
	pausedNow  = "status: {phase: Paused, candidateRevision: b, step: 3, steps: 3, parents: {total: 20, moved: 20, ready: 12}, message: paused at step 3 of 3}"
)

func TestRolloutStatusWatch(t *testing.T) {
	first := "phase Progressing, step 2 of 3, 5 of 20 parents moved, 4 ready: step 2 of 3: waiting for ns/p7 to be Ready"
	tests := []struct {
		name       string
		updates    []string // statuses written once the watch runs
		refuse     bool     // the API server refuses watches: poll
		slowGet    bool     // a read takes 200ms, and no watch starts
		args       []string // after "status ts -w"
		wantCode   int
		wantLines  []string
		wantStderr string
	}{
		{name: "complete after two updates", updates: []string{step3, step3Again, complete}, wantCode: 0, wantLines: []string{
			first,
			"phase Progressing, step 3 of 3, 20 of 20 parents moved, 12 ready: step 3 of 3",
			"phase Complete, 0 of 20 parents moved, 0 ready: b is stable",
		}},
		{name: "rolled back", updates: []string{rolledBack}, wantCode: 2, wantLines: []string{
			first, "phase RolledBack, 0 of 20 parents moved, 0 ready: ns/p7 failed; rolled back",
		}},
		{name: "paused goes on watching until the timeout", updates: []string{pausedNow}, args: []string{"--timeout", "300ms"}, wantCode: 3,
			wantLines:  []string{first, "phase Paused, step 3 of 3, 20 of 20 parents moved, 12 ready: paused at step 3 of 3"},
			wantStderr: "timed out after 300ms waiting for templateset/ts: phase Paused, step 3 of 3, 20 of 20 parents moved, 12 ready: paused at step 3 of 3\n"},
		{name: "timeout", args: []string{"--timeout", "100ms"}, wantCode: 3, wantLines: []string{first},
			wantStderr: "timed out after 100ms waiting for templateset/ts: " + first + "\n"},
		{name: "timeout before the first read is an error", slowGet: true, args: []string{"--timeout", "50ms"}, wantCode: 1,
			wantStderr: "Error: get templateset/ts: not read within --timeout 50ms: context deadline exceeded\n"},
		{name: "polls when it cannot watch", refuse: true, updates: []string{complete}, wantCode: 0,
			wantLines:  []string{first, "phase Complete, 0 of 20 parents moved, 0 ready: b is stable"},
			wantStderr: "watch templateset/ts: watch refused; reading it every 10ms instead\n"},
		{name: "polls to a rollback", refuse: true, updates: []string{rolledBack}, wantCode: 2,
			wantLines:  []string{first, "phase RolledBack, 0 of 20 parents moved, 0 ready: ns/p7 failed; rolled back"},
			wantStderr: "watch templateset/ts: watch refused; reading it every 10ms instead\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewSimpleDynamicClient(runtime.NewScheme(), fromYAML(t, templateSetYAML("ts", progressing)),
				fromYAML(t, templateSetYAML("other", complete)))
			watching := make(chan struct{})
			client.PrependWatchReactor("templatesets", func(a clienttesting.Action) (bool, watch.Interface, error) {
				defer close(watching)
				if tt.refuse {
					return true, nil, errors.New("watch refused")
				}
				// Watch first, then let the updates start, so that each
				// is an event of this watch.
				w, err := client.Tracker().Watch(v1alpha1.TemplateSetGVR, "", a.(clienttesting.WatchActionImpl).ListOptions)
				return true, w, err
			})
			if tt.slowGet {
				client.PrependReactor("get", "templatesets", func(clienttesting.Action) (bool, runtime.Object, error) {
					time.Sleep(200 * time.Millisecond)
					return false, nil, nil
				})
			}
			updated := make(chan error, 1)
			if tt.slowGet {
				updated <- nil
			} else {
				go func() { updated <- writeStatuses(client, watching, tt.updates) }()
			}

			args := append([]string{"status", "ts", "-w"}, tt.args...)
			out, errOut, code := runRollout(t, client, args...)
			if err := <-updated; err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			want := ""
			for _, l := range tt.wantLines {
				want += l + "\n"
			}
			if diff := cmp.Diff(want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStderr, errOut); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// writeStatuses writes each status in turn to TemplateSet ts once the command
// has started to watch (or tried to). It first updates another
// TemplateSet, Complete, which the command must ignore.
func writeStatuses(client *fake.FakeDynamicClient, watching <-chan struct{}, statuses []string) error {
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		return errors.New("the command never watched")
	}
	writes := append([]string{templateSetYAML("other", complete)}, statuses...)
	for i := 1; i < len(writes); i++ {
		writes[i] = templateSetYAML("ts", writes[i])
	}
	for _, w := range writes {
		j, err := yaml.YAMLToJSON([]byte(w))
		if err != nil {
			return err
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(j); err != nil {
			return err
		}
		if _, err := client.Resource(v1alpha1.TemplateSetGVR).Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
			return err
		}
		time.Sleep(30 * time.Millisecond) // a poll (every 10ms) sees each
	}
	return nil
}

func TestRolloutIsACommandWithExamples(t *testing.T) {
	for _, args := range [][]string{{"rollout", "--help"}, {"rollout", "status", "--help"}, {"rollout", "pause", "--help"},
		{"rollout", "resume", "--help"}, {"rollout", "promote", "--help"}, {"rollout", "abort", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := execute(t, "", args...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "Examples:\n  loom rollout ") || !strings.Contains(out, "--kubeconfig") {
				t.Errorf("help has no example or no --kubeconfig:\n%s", out)
			}
		})
	}
	if _, err := execute(t, "", "rollout", "bogus"); err == nil || !strings.Contains(err.Error(), `unknown command "bogus"`) {
		t.Errorf("loom rollout bogus: err %v, want an unknown command", err)
	}
}
