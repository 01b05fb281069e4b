package status

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/render"
)

func TestComputeExtraFields(t *testing.T) {
	tests := []struct {
		name         string
		extra        map[string]any
		wantExtra    map[string]any
		wantDegraded cond
	}{{
		name:         "merged at the top level",
		extra:        map[string]any{"url": "http://app.default.svc:8080", "ports": []int{80, 443}},
		wantExtra:    map[string]any{"url": "http://app.default.svc:8080", "ports": []any{int64(80), int64(443)}},
		wantDegraded: allGood[TypeDegraded],
	}, {
		name: "reserved fields are dropped and reported",
		extra: map[string]any{"url": "http://x", "state": "Hacked", "conditions": []any{},
			"observedGeneration": 1, "children": nil},
		wantExtra: map[string]any{"url": "http://x"},
		wantDegraded: cond{"True", ReasonStatusTemplateFailed,
			"status template sets observedGeneration, conditions, state, children, which Loom owns; ignored"},
	}, {
		name:         "not JSON",
		extra:        map[string]any{"url": func() {}},
		wantExtra:    map[string]any{},
		wantDegraded: cond{"True", ReasonStatusTemplateFailed, "status template fields are not JSON: json: unsupported type: func()"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := baseInput(t)
			in.Extra = tt.extra
			got := Compute(in)
			gotExtra := map[string]any{}
			for k, v := range got {
				if k != "observedGeneration" && k != "conditions" && k != "state" && k != "children" {
					gotExtra[k] = v
				}
			}
			if diff := cmp.Diff(tt.wantExtra, gotExtra); diff != "" {
				t.Errorf("extra fields mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDegraded, condsOf(t, got)[TypeDegraded]); diff != "" {
				t.Errorf("Degraded mismatch (-want +got):\n%s", diff)
			}
			if got["state"] != StateReady || got["observedGeneration"] != int64(7) {
				t.Errorf("Loom's fields overridden: state %v, observedGeneration %v", got["state"], got["observedGeneration"])
			}
		})
	}
}

func TestComputeLastTransitionTime(t *testing.T) {
	const before = "2024-04-01T08:00:00Z"
	tests := []struct {
		name     string
		previous []any
		want     map[string]string // type -> lastTransitionTime
	}{{
		name: "status unchanged, reason and message changed: kept",
		previous: []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Old", "message": "old",
				"lastTransitionTime": before, "observedGeneration": int64(6)},
			map[string]any{"type": "Degraded", "status": "False", "reason": "Old", "message": "old",
				"lastTransitionTime": before},
		},
		want: map[string]string{"Ready": before, "Progressing": "2024-05-01T12:00:00Z", "Degraded": before},
	}, {
		name: "status flipped: stamped now",
		previous: []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "ChildrenNotReady", "message": "waiting",
				"lastTransitionTime": before},
			map[string]any{"type": "Progressing", "status": "True", "reason": "ChildrenProgressing", "message": "waiting",
				"lastTransitionTime": before},
			map[string]any{"type": "Degraded", "status": "False", "reason": "AsExpected", "message": "no failures",
				"lastTransitionTime": before},
		},
		want: map[string]string{"Ready": "2024-05-01T12:00:00Z", "Progressing": "2024-05-01T12:00:00Z", "Degraded": before},
	}, {
		name: "previous entry without a time: stamped now",
		previous: []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "AllChildrenReady", "message": "x"},
		},
		want: map[string]string{"Ready": "2024-05-01T12:00:00Z", "Progressing": "2024-05-01T12:00:00Z",
			"Degraded": "2024-05-01T12:00:00Z"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := baseInput(t)
			in.Parent = withStatus(t, in.Parent, map[string]any{"conditions": tt.previous})
			got := map[string]string{}
			for _, c := range Compute(in)["conditions"].([]any) {
				m := c.(map[string]any)
				got[m["type"].(string)] = m["lastTransitionTime"].(string)
				if m["observedGeneration"] != int64(7) {
					t.Errorf("%s observedGeneration = %v, want 7", m["type"], m["observedGeneration"])
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lastTransitionTime mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeTruncatesMessages(t *testing.T) {
	in := baseInput(t)
	failResult(&in, ref("", "v1", "Service", "app"), errors.New(strings.Repeat("é", 3000)))
	msg := condsOf(t, Compute(in))[TypeDegraded].Message
	if len(msg) > maxConditionMessage || !strings.HasSuffix(msg, "...") || !strings.HasPrefix(msg, "apply Service app: é") {
		t.Errorf("Degraded message is %d bytes, %q...%q; want at most %d, cut with ...",
			len(msg), msg[:24], msg[len(msg)-8:], maxConditionMessage)
	}
	if !utf8.ValidString(msg) {
		t.Errorf("truncated message is not valid UTF-8")
	}
}

// TestComputeNilParent: Compute does not panic without a parent.
func TestComputeNilParent(t *testing.T) {
	in := baseInput(t)
	in.Parent = nil
	got := Compute(in)
	if got["observedGeneration"] != int64(0) || got["state"] != StateReady {
		t.Errorf("got observedGeneration %v, state %v; want 0, Ready", got["observedGeneration"], got["state"])
	}
}

// TestComputeMessagesAreValidUTF8: a failure whose text is not UTF-8 (a
// template's `fail "\xff"`, say) gives messages that are, so that the API
// server stores them as computed: JSON turns each invalid byte into a
// three-byte U+FFFD, which also broke the length caps. Found by
// FuzzCompute.
func TestComputeMessagesAreValidUTF8(t *testing.T) {
	bad := "bad \xff\xfe byte" + strings.Repeat("\xff", 2*maxConditionMessage)
	tests := []struct {
		name string
		edit func(in *Input)
	}{{
		name: "render error",
		edit: func(in *Input) {
			in.Rendered, in.Results = nil, nil
			in.RenderErr = &render.Error{File: "deployment.yaml", Line: 3, Err: errors.New(bad)}
		},
	}, {
		name: "apply error",
		edit: func(in *Input) { failResult(in, ref("apps", "v1", "Deployment", "app"), errors.New(bad)) },
	}, {
		name: "status template error",
		edit: func(in *Input) { in.ExtraErr = errors.New(bad) },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := baseInput(t)
			tt.edit(&in)
			got := Compute(in)
			stored := withStatus(t, in.Parent, got).Object["status"].(map[string]any) // as the API server stores it
			if diff := cmp.Diff(condsOf(t, got), condsOf(t, stored)); diff != "" {
				t.Errorf("conditions are not stored as computed (-computed +stored):\n%s", diff)
			}
			if diff := cmp.Diff(got["children"], stored["children"]); diff != "" {
				t.Errorf("children are not stored as computed (-computed +stored):\n%s", diff)
			}
			for typ, c := range condsOf(t, stored) {
				if len(c.Message) > maxConditionMessage {
					t.Errorf("%s message is stored as %d bytes, over %d", typ, len(c.Message), maxConditionMessage)
				}
			}
		})
	}
}
