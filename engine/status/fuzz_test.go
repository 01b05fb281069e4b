package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
)

// The bits of FuzzCompute's flags argument.
const (
	fuzzRenderErr      = 1 << iota // the templates did not render
	fuzzExtraErr                   // the status template failed
	fuzzErrWrapped                 // apply errors are wrapped as the apply stage wraps them
	fuzzErrNoMatch                 // apply errors are a kind the cluster does not serve
	fuzzErrOwned                   // apply errors are an OwnedByAnotherError
	fuzzPruneFailed                // one more result: a prune that failed
	fuzzLiveFromResult             // the live object of an applied child is only in its result
	fuzzRawLive                    // live objects keep their own identity instead of the rendered child's
)

// maxFuzzChildren bounds the children one input makes, so that each run
// stays fast.
const maxFuzzChildren = 16

// FuzzCompute feeds Compute random parents (with random previous
// conditions and children), rendered and live children, readiness rules,
// apply results, render and status template errors, and checks the
// properties the controller relies on: Compute never panics; it returns
// only JSON values; observedGeneration and the three conditions are always
// set, with valid statuses, reasons and times; state agrees with the
// conditions; a status equals itself after a round trip through the API
// server (or the controller would write it forever); computing again over
// the written status changes nothing; and Compute is deterministic and
// leaves its input alone.
//
//	go test ./engine/status -run '^$' -fuzz FuzzCompute -fuzztime 3m
func FuzzCompute(f *testing.F) {
	for _, s := range computeSeeds(f) {
		f.Add(s.parent, s.rendered, s.live, s.rules, s.extra, s.errText, s.actions, s.flags, s.now)
	}
	f.Fuzz(func(t *testing.T, parent, rendered, live, rules, extra []byte, errText string, actions uint64, flags uint16, now int64) {
		in := fuzzInput(parent, rendered, live, rules, extra, errText, actions, flags, now)
		before := snapshot(in)
		got := Compute(in)
		// reflect.DeepEqual first: cmp.Diff is slow, and the fuzzer's
		// speed is what finds bugs.
		if after := snapshot(in); !reflect.DeepEqual(before, after) {
			t.Fatalf("Compute changed its input (-before +after):\n%s", cmp.Diff(before, after))
		}
		checkStatus(t, in, got)
		if again := Compute(in); !reflect.DeepEqual(got, again) {
			t.Fatalf("Compute is not deterministic (-first +second):\n%s", cmp.Diff(got, again))
		}
		checkRoundTrip(t, in, got)
		checkChildKinds(t, in, got)
	})
}

// checkChildKinds checks that ChildKinds reads back, from the written
// status, the kind of every rendered child that has one: prune relies on
// it to find the kinds a parent's children were applied as.
func checkChildKinds(t *testing.T, in Input, got map[string]any) {
	t.Helper()
	kinds := ChildKinds(parentWith(t, in.Parent, got, true))
	for _, gvk := range kinds {
		if gvk.Kind == "" {
			t.Fatalf("ChildKinds returned a kind without a name: %v", kinds)
		}
	}
	if in.RenderErr != nil {
		return
	}
	for _, r := range in.Rendered {
		gv, err := schema.ParseGroupVersion(r.GetAPIVersion())
		if err != nil || r.GetKind() == "" {
			continue
		}
		if !slices.Contains(kinds, gv.WithKind(r.GetKind())) {
			t.Fatalf("ChildKinds %v lacks %s %s of a rendered child", kinds, r.GetAPIVersion(), r.GetKind())
		}
	}
}

// fuzzInput builds an Input from fuzz arguments. Bytes that are not the
// JSON expected become empty values, so every argument is always used.
func fuzzInput(parentJSON, renderedJSON, liveJSON, rulesJSON, extraJSON []byte, errText string, actions uint64, flags uint16, now int64) Input {
	in := Input{
		Parent: &unstructured.Unstructured{Object: jsonObject(parentJSON)},
		Live:   map[object.Ref]*unstructured.Unstructured{},
		// A clock between 1970 and 9999, which RFC 3339 can write.
		Now: time.Unix(int64(uint64(now)%253402300800), int64(uint64(now)%1e9)),
	}
	_ = json.Unmarshal(rulesJSON, &in.Rules)
	if m := jsonObject(extraJSON); len(m) > 0 {
		in.Extra = m
	}
	if flags&fuzzExtraErr != 0 {
		in.ExtraErr = &render.Error{File: "status.yaml", Line: 2, Err: errors.New(errText)}
	}
	lives := jsonObjects(liveJSON)
	if flags&fuzzRenderErr != 0 {
		// As the controller calls it: nothing rendered, nothing applied;
		// the live objects are those the previous status lists.
		in.RenderErr = &render.Error{File: "deployment.yaml", Line: 12, Err: errors.New(errText)}
		for _, l := range lives {
			u := &unstructured.Unstructured{Object: l}
			in.Live[object.RefOf(u)] = u
		}
		return in
	}
	for i, m := range jsonObjects(renderedJSON) {
		child := &unstructured.Unstructured{Object: m}
		in.Rendered = append(in.Rendered, child)
		ref := object.RefOf(child)
		var liveObj *unstructured.Unstructured
		if i < len(lives) {
			liveObj = &unstructured.Unstructured{Object: lives[i]}
			if flags&fuzzRawLive == 0 {
				liveObj.SetAPIVersion(child.GetAPIVersion())
				liveObj.SetKind(child.GetKind())
				liveObj.SetNamespace(child.GetNamespace())
				liveObj.SetName(child.GetName())
			}
		}
		res := object.Result{Ref: ref, Action: []object.Action{object.Created, object.Configured, object.Unchanged, object.Failed}[actions>>(2*(i%32))&3]}
		switch {
		case res.Action == object.Failed:
			res.Err = fuzzApplyErr(child, errText, flags)
		case liveObj != nil && flags&fuzzLiveFromResult != 0:
			res.Object = liveObj
			liveObj = nil
		}
		in.Results = append(in.Results, res)
		if liveObj != nil {
			in.Live[object.RefOf(liveObj)] = liveObj
		}
	}
	if flags&fuzzPruneFailed != 0 {
		gone := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": errText},
		}}
		in.Results = append(in.Results, object.Result{Ref: object.RefOf(gone), Action: object.Failed,
			Err: fmt.Errorf("prune %s: %w", object.RefOf(gone), errors.New(errText))})
	}
	return in
}

// fuzzApplyErr is the apply error of child that flags choose.
func fuzzApplyErr(child *unstructured.Unstructured, text string, flags uint16) error {
	ref := object.RefOf(child)
	switch {
	case flags&fuzzErrNoMatch != 0:
		gvk := child.GroupVersionKind()
		return fmt.Errorf("get mapping: %w", &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}})
	case flags&fuzzErrOwned != 0:
		return &object.OwnedByAnotherError{Ref: ref, Owner: metav1.OwnerReference{Kind: "Widget", Name: text},
			Want: metav1.OwnerReference{Kind: "MyResource", Name: "app"}, Err: errors.New(text)}
	case flags&fuzzErrWrapped != 0:
		return fmt.Errorf("apply %s: %w", ref, errors.New(text))
	case text == "":
		return nil // a Failed result without an error
	}
	return errors.New(text)
}

// jsonObject decodes a JSON object the way the API machinery does (whole
// numbers as int64), or returns an empty one.
func jsonObject(raw []byte) map[string]any {
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil || m == nil {
		return map[string]any{}
	}
	return m
}

// jsonObjects decodes a JSON array of objects, skipping other items.
func jsonObjects(raw []byte) []map[string]any {
	var items []any
	if err := utiljson.Unmarshal(raw, &items); err != nil {
		return nil
	}
	var out []map[string]any
	for _, item := range items {
		if m, ok := item.(map[string]any); ok && len(out) < maxFuzzChildren {
			out = append(out, m)
		}
	}
	return out
}

// inputSnapshot is the part of an Input that Compute must not change.
type inputSnapshot struct {
	Parent   map[string]any
	Rendered []map[string]any
	Live     map[string]map[string]any
	Extra    map[string]any
}

func snapshot(in Input) inputSnapshot {
	s := inputSnapshot{Parent: runtime.DeepCopyJSON(in.Parent.Object), Live: map[string]map[string]any{}}
	for _, r := range in.Rendered {
		s.Rendered = append(s.Rendered, runtime.DeepCopyJSON(r.Object))
	}
	for ref, l := range in.Live {
		s.Live[ref.String()] = runtime.DeepCopyJSON(l.Object)
	}
	if in.Extra != nil {
		s.Extra = runtime.DeepCopyJSON(in.Extra)
	}
	return s
}

// conditionReason is the pattern metav1.Condition's reason must match.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

var childStatuses = []string{statusCurrent, statusInProgress, statusFailed, statusTerminating, statusNotFound, statusUnknown}

// checkStatus checks the properties of one computed status.
func checkStatus(t *testing.T, in Input, got map[string]any) {
	t.Helper()
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("the status holds a value that is not JSON: %v", p)
			}
		}()
		runtime.DeepCopyJSON(got)
	}()
	gen := in.Parent.GetGeneration()
	if got[fieldObservedGeneration] != gen {
		t.Fatalf("observedGeneration = %#v, want %d", got[fieldObservedGeneration], gen)
	}
	conds := checkConditions(t, in, got[fieldConditions], gen)
	checkState(t, in, got[fieldState], conds)
	checkChildren(t, in, got[fieldChildren])
	for k := range got {
		if _, fromTemplate := in.Extra[k]; !slices.Contains(reservedFields, k) && (in.ExtraErr != nil || !fromTemplate) {
			t.Fatalf("status field %q comes from no status template field (extra %v, error %v)", k, in.Extra, in.ExtraErr)
		}
	}
}

// checkConditions checks that Ready, Progressing and Degraded are there,
// in that order (Drifted after them when the parent has it), valid for the CRD's schema, and stamped now unless their
// status did not change. It returns them by type.
func checkConditions(t *testing.T, in Input, raw any, gen int64) map[string]metav1.Condition {
	t.Helper()
	items, ok := raw.([]any)
	// Drifted, the last, only on a parent that has or had a drifted child.
	if !ok || len(items) < len(loomConditions)-1 || len(items) > len(loomConditions) {
		t.Fatalf("conditions = %#v, want %d entries, or %d with Drifted", raw, len(loomConditions)-1, len(loomConditions))
	}
	previous := previousByType(in.Parent)
	stamp := in.Now.UTC().Format(time.RFC3339)
	out := map[string]metav1.Condition{}
	for i, item := range items {
		m, _ := item.(map[string]any)
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		ltt, _ := m["lastTransitionTime"].(string)
		switch {
		case typ != loomConditions[i]:
			t.Fatalf("condition %d is %q, want %s", i, typ, loomConditions[i])
		case status != "True" && status != "False":
			t.Fatalf("%s status = %q, want True or False", typ, status)
		case !conditionReason.MatchString(reason):
			t.Fatalf("%s reason %q is not a valid reason", typ, reason)
		case msg == "" || len(msg) > maxConditionMessage || !utf8.ValidString(msg):
			t.Fatalf("%s message is empty, over %d bytes or not UTF-8: %q", typ, maxConditionMessage, msg)
		case m["observedGeneration"] != gen:
			t.Fatalf("%s observedGeneration = %#v, want %d", typ, m["observedGeneration"], gen)
		}
		want := stamp
		if p, ok := previous[typ]; ok && string(p.Status) == status && !p.LastTransitionTime.IsZero() {
			want = p.LastTransitionTime.UTC().Format(time.RFC3339)
		}
		if ltt != want {
			t.Fatalf("%s lastTransitionTime = %q, want %q (previous %+v)", typ, ltt, want, previous[typ])
		}
		out[typ] = metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg}
	}
	return out
}

// previousByType decodes the parent's previous conditions, keeping the
// first of each type, as meta.FindStatusCondition finds it.
func previousByType(parent *unstructured.Unstructured) map[string]metav1.Condition {
	raw, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status", "conditions")
	items, _ := raw.([]any)
	out := map[string]metav1.Condition{}
	for _, item := range items {
		var c metav1.Condition
		b, _ := json.Marshal(item)
		if json.Unmarshal(b, &c) != nil || c.Type == "" {
			continue
		}
		if _, ok := out[c.Type]; !ok {
			out[c.Type] = c
		}
	}
	return out
}

// checkState checks that state and the conditions tell the same story, and
// that the most severe failure of the input is the one reported.
func checkState(t *testing.T, in Input, state any, c map[string]metav1.Condition) {
	t.Helper()
	ready, progressing, degraded := c[TypeReady], c[TypeProgressing], c[TypeDegraded]
	failed := degraded.Status == metav1.ConditionTrue &&
		slices.Contains([]string{ReasonRenderFailed, ReasonApplyFailed, ReasonChildFailed}, degraded.Reason)
	want := StateBuilding
	switch {
	case failed:
		want = StateFailed
	case ready.Status == metav1.ConditionTrue:
		want = StateReady
	}
	if state != want {
		t.Fatalf("state = %#v with conditions %+v, want %s", state, c, want)
	}
	if (degraded.Status == metav1.ConditionFalse) != (degraded.Reason == ReasonAsExpected) {
		t.Fatalf("Degraded is %s with reason %s", degraded.Status, degraded.Reason)
	}
	if ready.Status == metav1.ConditionTrue && (progressing.Status == metav1.ConditionTrue || failed) {
		t.Fatalf("Ready is True while Progressing is %s and Degraded is %s (%s)", progressing.Status, degraded.Status, degraded.Reason)
	}
	applyFailed := slices.ContainsFunc(in.Results, resultFailed)
	var wantReason string
	switch {
	case in.RenderErr != nil:
		wantReason = ReasonRenderFailed
	case applyFailed:
		wantReason = ReasonApplyFailed
	case in.ExtraErr != nil && degraded.Reason != ReasonChildFailed:
		wantReason = ReasonStatusTemplateFailed
	}
	if wantReason != "" && (degraded.Status != metav1.ConditionTrue || degraded.Reason != wantReason) {
		t.Fatalf("Degraded is %s (%s: %s), want True (%s)", degraded.Status, degraded.Reason, degraded.Message, wantReason)
	}
	if in.RenderErr != nil && (ready.Reason != ReasonRenderFailed || progressing.Reason != ReasonRenderFailed) {
		t.Fatalf("a render error, but Ready is %s and Progressing %s", ready.Reason, progressing.Reason)
	}
}

// resultFailed is failed, written out again so the check does not trust it.
func resultFailed(r object.Result) bool { return r.Action == object.Failed || r.Err != nil }

// checkChildren checks each status.children entry, and that the rendered
// children are listed in the order they rendered.
func checkChildren(t *testing.T, in Input, raw any) {
	t.Helper()
	items, ok := raw.([]any)
	if !ok {
		t.Fatalf("children = %#v, want a list", raw)
	}
	if in.RenderErr == nil && len(items) != len(in.Rendered) {
		t.Fatalf("%d children listed for %d rendered", len(items), len(in.Rendered))
	}
	for i, item := range items {
		m, _ := item.(map[string]any)
		if len(m) != 6 {
			t.Fatalf("child %d = %#v, want apiVersion, kind, name, ready, status, message", i, item)
		}
		ready, okReady := m["ready"].(bool)
		status, _ := m["status"].(string)
		msg, okMsg := m["message"].(string)
		switch {
		case !okReady || !okMsg:
			t.Fatalf("child %d has ready %#v and message %#v", i, m["ready"], m["message"])
		case len(msg) > maxChildMessage || !utf8.ValidString(msg):
			t.Fatalf("child %d message is over %d bytes or not UTF-8: %q", i, maxChildMessage, msg)
		case ready && status != statusCurrent:
			t.Fatalf("child %d is ready with status %q", i, status)
		case in.RenderErr == nil && !slices.Contains(childStatuses, status):
			t.Fatalf("child %d status %q is not a kstatus status", i, status)
		}
		if in.RenderErr == nil {
			r := in.Rendered[i]
			if m["kind"] != r.GetKind() || m["name"] != r.GetName() || m["apiVersion"] != r.GetAPIVersion() {
				t.Fatalf("child %d is %v %v %v, want rendered %s %s %s", i, m["apiVersion"], m["kind"], m["name"],
					r.GetAPIVersion(), r.GetKind(), r.GetName())
			}
		}
	}
}

// checkRoundTrip writes the status to the parent as the API server returns
// it and checks that Equal sees no change, that it does see one when the
// state differs, and that computing again over the written status gives
// the same status: a parent whose inputs do not change is written once.
func checkRoundTrip(t *testing.T, in Input, got map[string]any) {
	t.Helper()
	if !Equal(got, parentWith(t, in.Parent, got, false)) {
		t.Fatalf("Equal(x, x) is false for %v", got)
	}
	written := parentWith(t, in.Parent, got, true)
	if !Equal(got, written) {
		t.Fatalf("a status is not Equal to itself after a JSON round trip: the controller would write it on every reconcile\n%v", got)
	}
	other := parentWith(t, in.Parent, got, true)
	other.Object["status"].(map[string]any)[fieldState] = "Other"
	if Equal(got, other) {
		t.Fatalf("Equal ignores a different state")
	}
	next := in
	next.Parent = written
	next.Now = in.Now.Add(time.Hour)
	again := Compute(next)
	if !Equal(again, written) {
		t.Fatalf("computing again over the written status changes it (-written +again):\n%s", cmp.Diff(got, again))
	}
}

// parentWith returns a copy of parent whose status is status, through a
// JSON round trip when roundTrip is set.
func parentWith(t *testing.T, parent *unstructured.Unstructured, status map[string]any, roundTrip bool) *unstructured.Unstructured {
	t.Helper()
	p := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(parent.Object)}
	p.Object["status"] = runtime.DeepCopyJSON(status)
	if !roundTrip {
		return p
	}
	raw, err := json.Marshal(p.Object)
	if err != nil {
		t.Fatalf("encode parent: %v", err)
	}
	return &unstructured.Unstructured{Object: jsonObject(raw)}
}

// computeSeed is one FuzzCompute input.
type computeSeed struct {
	parent, rendered, live, rules, extra []byte
	errText                              string
	actions                              uint64
	flags                                uint16
	now                                  int64
}

// computeSeeds are the unit tests' fixtures, in the failure modes the
// flags choose.
func computeSeeds(f *testing.F) []computeSeed {
	j := func(docs ...string) []byte {
		var items []any
		for _, d := range docs {
			raw, err := yaml.YAMLToJSON([]byte(d))
			if err != nil {
				f.Fatalf("seed: %v", err)
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				f.Fatalf("seed: %v", err)
			}
			items = append(items, v)
		}
		b, _ := json.Marshal(items)
		return b
	}
	parent := j(parentDoc)
	parent = parent[1 : len(parent)-1] // one object, not a list
	withStatus := []byte(`{"apiVersion":"example.loom.dev/v1alpha1","kind":"MyResource","metadata":{"name":"app","namespace":"default","generation":8},` +
		`"status":{"conditions":[{"type":"Ready","status":"True","reason":"AllChildrenReady","message":"x","lastTransitionTime":"2024-04-01T08:00:00+02:00"},` +
		`{"type":"Degraded","status":"False"}],"children":[{"apiVersion":"apps/v1","kind":"Deployment","name":"app","ready":true,"status":"Current","message":"m"},` +
		`{"kind":"ConfigMap","name":"app-config","ready":false}]}}`)
	rendered := j(renderedConfigMap, renderedDeployment, renderedService)
	live := j(renderedConfigMap, liveDeploymentReady, liveService)
	rolling := j(renderedConfigMap, liveDeploymentRolling)
	deadline := j(liveDeploymentDeadline)
	jobRules := []byte(`[{"kind":"Deployment","condition":"Available","failedCondition":"Failed"},{"kind":"ConfigMap","ignore":true}]`)
	extra := []byte(`{"url":"http://app.default.svc:8080","replicas":3,"ratio":0.5,"state":"Hacked"}`)
	when := now.Unix()
	return []computeSeed{
		{parent, rendered, live, nil, extra, "", 0b10_01_00, 0, when},
		{parent, rendered, rolling, jobRules, nil, "conflict", 0b11_10_10, fuzzErrWrapped | fuzzPruneFailed, when},
		{withStatus, nil, deadline, jobRules, extra, "map has no entry for key \"image\"", 0, fuzzRenderErr, when},
		{withStatus, rendered, live, nil, extra, "boom", 0b11_00_11, fuzzErrOwned | fuzzExtraErr | fuzzLiveFromResult, when},
		{parent, rendered, deadline, nil, nil, "", 0b00_11_00, fuzzErrNoMatch | fuzzRawLive, when},
	}
}
