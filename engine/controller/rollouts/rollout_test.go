package rollouts

import (
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/rollout"
)

func TestTemplateSetName(t *testing.T) {
	tests := []struct {
		set, namespace, want string
	}{
		{set: "myresource", want: "myresource"},
		{set: "myresource", namespace: "team-a", want: "myresource.team-a"},
		{set: "My_Set", want: "my-set"},
		{set: "__", want: "set"},
		{set: "web.v2", namespace: "ns", want: "web.v2.ns"},
	}
	for _, tt := range tests {
		t.Run(tt.set+"/"+tt.namespace, func(t *testing.T) {
			if got := templateSetName(&render.Set{Name: tt.set}, tt.namespace); got != tt.want {
				t.Errorf("templateSetName(%q, %q) = %q, want %q", tt.set, tt.namespace, got, tt.want)
			}
		})
	}
}

// Every status Loom wrote to the TemplateSet is its own echo, not only the
// last, and whether or not the write has returned: on a loaded machine a
// write's watch event can arrive before the write returns, or after the
// next write. An echo taken for somebody else's change wakes a decision
// that writes the parents' count again, in a loop for as long as parents
// come.
func TestOwnWriteKnowsEveryEchoInFlight(t *testing.T) {
	ts := func(uid string, generation int64, total int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"status": map[string]any{"phase": "Complete", "parents": map[string]any{"total": total}},
		}}
		u.SetUID(types.UID(uid))
		u.SetGeneration(generation)
		return u
	}
	r := &Rollout{}
	r.remember(`{"parents":{"total":2},"phase":"Complete"}`)
	r.remember(`{"parents":{"total":4},"phase":"Complete"}`)
	cleared := ts("a", 1, 0)
	delete(cleared.Object, "status")
	tests := []struct {
		name     string
		old, cur *unstructured.Unstructured
		want     bool
	}{
		{"echo of the last write", ts("a", 1, 2), ts("a", 1, 4), true},
		{"echo of the write before, arriving late", ts("a", 1, 0), ts("a", 1, 2), true},
		{"somebody else's status", ts("a", 1, 4), ts("a", 1, 5), false},
		{"status cleared", ts("a", 1, 4), cleared, false},
		{"a spec edit", ts("a", 1, 4), ts("a", 2, 4), false},
		{"a TemplateSet made again", ts("a", 1, 2), ts("b", 1, 4), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.ownWrite(tt.old, tt.cur); got != tt.want {
				t.Errorf("ownWrite = %v, want %v", got, tt.want)
			}
		})
	}
}

// resourceVersions are opaque, and after an etcd restore they go
// backwards: a TemplateSet that the cache holds at a version below the one
// Loom's last status write produced is the TemplateSet as it is now, not a
// cache that lags behind the write. Deciding from Loom's copy instead
// writes with a resourceVersion the server no longer has, and conflicts
// until the numbers pass it again. Loom's copy is used only while the
// cache holds a version its writes since were based on.
func TestTemplateSetAfterResourceVersionsWentBack(t *testing.T) {
	ts := func(rv string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "loom.dev/v1alpha1", "kind": "TemplateSet",
			"metadata": map[string]any{"name": "web", "uid": "a", "resourceVersion": rv},
		}}
	}
	tests := []struct {
		name     string
		behind   []string // the versions Loom's writes were based on
		cached   string
		wantRV   string
		wantLast bool // Loom's copy is still kept
	}{
		{"restored below Loom's write", nil, "500", "500", false},
		{"restored to the version Loom's writes started from, after the cache delivered them", nil, "7", "7", false},
		{"cache at the version Loom's first write was based on", []string{"7", "8"}, "7", "1000", true},
		{"cache at an earlier write of Loom's", []string{"7", "8"}, "8", "1000", true},
		{"cache holds Loom's last write", []string{"7", "8"}, "1000", "1000", false},
		{"restored to another version", []string{"7", "8"}, "500", "500", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
			if err := inf.GetStore().Add(ts(tt.cached)); err != nil {
				t.Fatal(err)
			}
			r := &Rollout{name: "web", informer: inf, last: ts("1000"), behind: tt.behind}
			got, err := r.templateSet(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.GetResourceVersion() != tt.wantRV {
				t.Errorf("templateSet = the TemplateSet at resourceVersion %s, want %s", got.GetResourceVersion(), tt.wantRV)
			}
			if (r.last != nil) != tt.wantLast {
				t.Errorf("Loom's copy kept = %v, want %v", r.last != nil, tt.wantLast)
			}
		})
	}
}

// A TemplateSet's status is the state, the set, its parent kind and the
// conditions the state implies, merged into the ones it had: a condition
// whose status stays keeps its transition time, and an unreadable list is
// replaced.
func TestTemplateSetStatus(t *testing.T) {
	folder := &render.Set{Dir: "/sets/app"}
	cond := func(typ, status, reason string) any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": "",
			"observedGeneration": int64(1), "lastTransitionTime": "2026-01-02T03:04:05Z"}
	}
	complete := []any{cond("Ready", "True", "Complete"), cond("Reconciling", "False", "Complete"), cond("Stalled", "False", "Complete")}
	tests := []struct {
		name string
		old  map[string]any
		s    rollout.State
		want string
	}{{
		name: "the same conditions",
		old:  map[string]any{"conditions": complete},
		s:    rollout.State{StableRevision: "a", Phase: rollout.Complete, Parents: rollout.Counts{Total: 3}},
		want: `{"conditions":[` +
			`{"lastTransitionTime":"2026-01-02T03:04:05Z","message":"","observedGeneration":2,"reason":"Complete","status":"True","type":"Ready"},` +
			`{"lastTransitionTime":"2026-01-02T03:04:05Z","message":"","observedGeneration":2,"reason":"Complete","status":"False","type":"Reconciling"},` +
			`{"lastTransitionTime":"2026-01-02T03:04:05Z","message":"","observedGeneration":2,"reason":"Complete","status":"False","type":"Stalled"}],` +
			`"parentKind":"/","parents":{"moved":0,"ready":0,"total":3},"phase":"Complete","set":"/sets/app","stableRevision":"a"}`,
	}, {
		name: "a step started",
		old:  map[string]any{"conditions": complete},
		s: rollout.State{StableRevision: "a", CandidateRevision: "b", Phase: rollout.Progressing, Step: 1, Steps: 2,
			Threshold: "12", StepStartedAt: &metav1.Time{Time: time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)}, Message: "step 1",
			Parents: rollout.Counts{Total: 3, Moved: 1}},
		want: `{"candidateRevision":"b","conditions":[` +
			`{"lastTransitionTime":"NOW","message":"step 1","observedGeneration":2,"reason":"Progressing","status":"False","type":"Ready"},` +
			`{"lastTransitionTime":"NOW","message":"step 1","observedGeneration":2,"reason":"Progressing","status":"True","type":"Reconciling"},` +
			`{"lastTransitionTime":"2026-01-02T03:04:05Z","message":"","observedGeneration":2,"reason":"Progressing","status":"False","type":"Stalled"}],` +
			`"message":"step 1","parentKind":"/","parents":{"moved":1,"ready":0,"total":3},"phase":"Progressing","set":"/sets/app","stableRevision":"a",` +
			`"step":1,"stepStartedAt":"2026-01-02T04:00:00Z","steps":2,"threshold":"12"}`,
	}, {
		name: "unreadable conditions",
		old:  map[string]any{"conditions": "not a list"},
		s:    rollout.State{StableRevision: "a", Phase: rollout.Complete},
		want: `{"conditions":[` +
			`{"lastTransitionTime":"NOW","message":"","observedGeneration":2,"reason":"Complete","status":"True","type":"Ready"},` +
			`{"lastTransitionTime":"NOW","message":"","observedGeneration":2,"reason":"Complete","status":"False","type":"Reconciling"},` +
			`{"lastTransitionTime":"NOW","message":"","observedGeneration":2,"reason":"Complete","status":"False","type":"Stalled"}],` +
			`"parentKind":"/","parents":{"moved":0,"ready":0,"total":0},"phase":"Complete","set":"/sets/app","stableRevision":"a"}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := templateSetStatus(tt.old, 2, folder, tt.s)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			// A transition made now is stamped with the clock.
			got := regexp.MustCompile(`"lastTransitionTime":"2026-01-02T03:04:05Z"`).ReplaceAllString(string(b), "OLD")
			got = regexp.MustCompile(`"lastTransitionTime":"[^"]*"`).ReplaceAllString(got, `"lastTransitionTime":"NOW"`)
			got = strings.ReplaceAll(got, "OLD", `"lastTransitionTime":"2026-01-02T03:04:05Z"`)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("templateSetStatus (-want +got):\n%s", diff)
			}
		})
	}
}

// Two sets whose folders have the same name share a TemplateSet's name. A
// Loom must not take the other set's TemplateSet for its own: it would
// make its own revision the candidate of the other's rollout, and prune
// the other's TemplateRevisions. It refuses, naming both kinds; a change
// of the parents' version alone is the same set.
func TestTemplateSetOfAnotherSetIsRefused(t *testing.T) {
	folder, err := render.LoadFS(fstest.MapFS{
		"loom.yaml": {Data: []byte("parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource}\n")},
		"cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n")},
	}, "/sets/app")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, parentKind string
		wantErr          string
	}{
		{"not written yet", "", ""},
		{"this set's", "example.loom.dev/v1alpha1/MyResource", ""},
		{"this set's, at another version", "example.loom.dev/v1/MyResource", ""},
		{"another group's kind of the same name", "other.example.com/v1alpha1/MyResource",
			`keeps the rollout of another set, whose parents are other.example.com/v1alpha1/MyResource (this set's are MyResource.example.loom.dev): two template sets in folders named "app"`},
		{"a core kind", "v1/ConfigMap", "whose parents are v1/ConfigMap"},
		{"unreadable", "nonsense", "whose parents are nonsense"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "loom.dev/v1alpha1", "kind": "TemplateSet",
				"metadata": map[string]any{"name": "app", "uid": "a", "resourceVersion": "5"},
			}}
			if tt.parentKind != "" {
				ts.Object["status"] = map[string]any{"parentKind": tt.parentKind}
			}
			inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
			if err := inf.GetStore().Add(ts); err != nil {
				t.Fatal(err)
			}
			r := &Rollout{name: "app", informer: inf}
			got, err := r.templateSet(t.Context(), folder)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("templateSet: %v, want the cached TemplateSet", err)
			case tt.wantErr == "" && got.GetUID() != "a":
				t.Fatalf("templateSet = %v, want the cached TemplateSet", got)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("templateSet: %v, want an error containing %q", err, tt.wantErr)
			}

			// The same when the cache does not hold it yet: the create
			// finds it exists (another Loom made it) and reads it.
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{v1alpha1.TemplateSetGVR: "TemplateSetList"}, ts.DeepCopy())
			empty := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
			r = &Rollout{name: "app", informer: empty,
				store: &rolloutStore{client: client, name: "app", fieldManager: "loom", timeout: time.Second}}
			got, err = r.templateSet(t.Context(), folder)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("templateSet through the create: %v, want the existing TemplateSet", err)
			case tt.wantErr == "" && got.GetUID() != "a":
				t.Fatalf("templateSet through the create = %v, want the existing TemplateSet", got)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("templateSet through the create: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// A reload that gives a set a rollout policy while its controller syncs
// its parent cache (after beforeParents looked, before running is set)
// does not enable the rollout (reload enables only running controllers).
// The start must then do it: otherwise the phase stays idle and every
// parent waits for a rollout state that never comes.
func TestPolicyGainedWhileStartingIsStarted(t *testing.T) {
	noPolicy, err := render.LoadFS(fstest.MapFS{
		"loom.yaml": {Data: []byte("parent: {apiVersion: example.com/v1, kind: Widget}\n")},
		"cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n")},
	}, "widget")
	if err != nil {
		t.Fatal(err)
	}
	withPolicy, err := render.LoadFS(fstest.MapFS{
		"loom.yaml": {Data: []byte("parent: {apiVersion: example.com/v1, kind: Widget}\nrollout: {steps: ['100%']}\n")},
		"cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n")},
	}, "widget")
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{}
	h.folder.Store(noPolicy)
	r := newTestRollout(h)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
	defer cancel()
	r.BeforeParents(ctx) // no policy yet: nothing to watch
	h.folder.Store(withPolicy)
	r.BeforeWorkers(ctx)
	if p := r.phase.Load(); p == phaseIdle {
		t.Fatal("the rollout of a policy gained while the controller started was never started (phase idle)")
	}
}

// The SchemaAccepted condition (--install-crds) joins the TemplateSet's
// rollout conditions.
func TestTemplateSetStatusCarriesSchemaCondition(t *testing.T) {
	folder := &render.Set{Dir: "/sets/app"}
	cond := metav1.Condition{Type: "SchemaAccepted", Status: "False", Reason: "BreakingChange", Message: "CRD widgets.test.loom.dev: breaking change"}
	st, err := templateSetStatus(nil, 3, folder, rollout.State{StableRevision: "a", Phase: rollout.Complete}, cond)
	if err != nil {
		t.Fatal(err)
	}
	conds, _ := st["conditions"].([]any)
	var got map[string]any
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == "SchemaAccepted" {
			got = m
		}
	}
	if got == nil || got["status"] != "False" || got["reason"] != "BreakingChange" || got["observedGeneration"] != int64(3) {
		t.Errorf("SchemaAccepted condition = %v, want False BreakingChange at generation 3 (conditions %v)", got, conds)
	}
}

// A stable revision kept by an older Loom whose templates this one refuses
// (now, say) cannot be rendered or loaded any more: the decision would
// fail for good, and a fixed folder would never roll out. It is handled
// as a stable revision whose files are gone: the folder's revision
// becomes stable. One that loads stays stable.
func TestStableRevisionThatNoLongerLoads(t *testing.T) {
	const parent = "parent: {apiVersion: example.com/v1, kind: Widget}\nrollout: {steps: ['100%']}\n"
	for _, tt := range []struct {
		name, template string
		wantReset      bool
	}{
		{"calls now", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\ndata: {at: '{{ now }}'}\n", true},
		{"loads", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			folder, err := render.LoadFS(fstest.MapFS{
				"loom.yaml": {Data: []byte(parent)},
				"cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}-fixed'}\n")},
			}, "widget")
			if err != nil {
				t.Fatal(err)
			}
			h := &fakeHost{}
			h.folder.Store(folder)
			r := newTestRollout(h)
			rev := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "loom.dev/v1alpha1", "kind": "TemplateRevision",
				"metadata": map[string]any{"name": r.store.revisionName("old")},
				"set":      r.name, "revision": "old",
				"files": map[string]any{"loom.yaml": parent, "cm.yaml": tt.template},
			}}
			r.store.client = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{v1alpha1.TemplateRevisionGVR: "TemplateRevisionList"}, rev)
			in := rollout.Input{Revision: folder.Revision(), State: rollout.State{StableRevision: "old"}}
			if err := r.ensureStable(t.Context(), &in); err != nil {
				t.Fatal(err)
			}
			if reset := in.State.StableRevision == ""; reset != tt.wantReset {
				t.Errorf("stable revision reset = %v, want %v (state %+v)", reset, tt.wantReset, in.State)
			}
		})
	}
}

// Every field of the rollout's State reaches the TemplateSet's typed
// status and comes back from it unchanged: a field added to State but not
// to api/v1alpha1's TemplateSetStatus would be lost from the status, and
// a restarted Loom would decide without it.
func TestStatusOf(t *testing.T) {
	at := func(h int) *metav1.Time { return &metav1.Time{Time: time.Date(2026, 1, 2, h, 0, 0, 0, time.UTC)} }
	s := rollout.State{StableRevision: "a", CandidateRevision: "b", RejectedRevision: "c", Phase: rollout.Failed,
		Step: 2, Steps: 3, Threshold: "12", Halted: true, StepStartedAt: at(4), StepReadyAt: at(5),
		ObservedResume: "r", FailedParent: "ns/p", Message: "m", Parents: rollout.Counts{Total: 3, Moved: 2, Ready: 1}}
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test's State leaves %s zero: set it, so that the test covers it", v.Type().Field(i).Name)
		}
	}
	st := statusOf(s)
	if st.Phase != v1alpha1.PhaseFailed || st.Parents != (v1alpha1.ParentCounts{Total: 3, Moved: 2, Ready: 1}) {
		t.Errorf("status: got %+v", st)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := rollout.FromObject(&unstructured.Unstructured{Object: map[string]any{"status": m}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("State -> TemplateSetStatus -> State (-want +got):\n%s", diff)
	}
}
