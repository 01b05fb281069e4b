package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestEqual(t *testing.T) {
	in := baseInput(t)
	in.Extra = map[string]any{"url": "http://app.default.svc:8080"}
	want := Compute(in)

	tests := []struct {
		name string
		// edit changes the live status, which starts as want after a JSON
		// round trip through the API server.
		edit    func(status map[string]any)
		nilLive bool
		want    bool
	}{{
		name: "identical",
		edit: func(map[string]any) {},
		want: true,
	}, {
		name: "condition message differs",
		edit: func(s map[string]any) { conditionOf(s, TypeReady)["message"] = "waiting for Deployment app" },
		want: false,
	}, {
		name: "condition status differs",
		edit: func(s map[string]any) { conditionOf(s, TypeDegraded)["status"] = "True" },
		want: false,
	}, {
		name: "a Loom condition is missing",
		edit: func(s map[string]any) { s["conditions"] = s["conditions"].([]any)[:2] },
		want: false,
	}, {
		name: "observedGeneration differs",
		edit: func(s map[string]any) { s["observedGeneration"] = int64(6) },
		want: false,
	}, {
		name: "state differs",
		edit: func(s map[string]any) { s["state"] = StateBuilding },
		want: false,
	}, {
		name: "a child's readiness differs",
		edit: func(s map[string]any) { s["children"].([]any)[1].(map[string]any)["ready"] = false },
		want: false,
	}, {
		name: "a child is missing",
		edit: func(s map[string]any) { s["children"] = s["children"].([]any)[:2] },
		want: false,
	}, {
		name: "extra field differs",
		edit: func(s map[string]any) { s["url"] = "http://old" },
		want: false,
	}, {
		name: "extra field missing",
		edit: func(s map[string]any) { delete(s, "url") },
		want: false,
	}, {
		name: "fields and conditions Loom does not own",
		edit: func(s map[string]any) {
			s["lastBackup"] = "2024-05-01"
			s["conditions"] = append(s["conditions"].([]any), map[string]any{
				"type": "Synced", "status": "True", "reason": "X", "message": "other controller",
				"lastTransitionTime": "2020-01-01T00:00:00Z"})
			s["children"].([]any)[0].(map[string]any)["note"] = "not in the schema"
		},
		want: true,
	}, {
		name: "times compared as instants, not text",
		edit: func(s map[string]any) {
			conditionOf(s, TypeReady)["lastTransitionTime"] = "2024-05-01T14:00:00+02:00"
		},
		want: true,
	}, {
		name: "a different instant",
		edit: func(s map[string]any) {
			conditionOf(s, TypeReady)["lastTransitionTime"] = "2024-05-01T12:00:01Z"
		},
		want: false,
	}, {
		name: "conditions in another order",
		edit: func(s map[string]any) {
			c := s["conditions"].([]any)
			c[0], c[2] = c[2], c[0]
		},
		want: true,
	}, {
		name: "numbers in another Go type",
		edit: func(s map[string]any) {
			s["observedGeneration"] = float64(7)
			conditionOf(s, TypeReady)["observedGeneration"] = float64(7)
		},
		want: true,
	}, {
		name: "live has no status yet",
		edit: func(s map[string]any) {
			for k := range s {
				delete(s, k)
			}
		},
		want: false,
	}, {
		name:    "no live parent",
		nilLive: true,
		want:    false,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var live *unstructured.Unstructured
			if !tt.nilLive {
				live = withStatus(t, in.Parent, want)
				tt.edit(live.Object["status"].(map[string]any))
			}
			if got := Equal(want, live); got != tt.want {
				t.Errorf("Equal() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEqualAfterWrite: the status Compute returns, written and read back,
// is Equal to itself, so the controller does not write it again; and a
// second Compute over the written parent changes nothing.
func TestEqualAfterWrite(t *testing.T) {
	in := baseInput(t)
	in.Extra = map[string]any{"url": "http://app.default.svc:8080", "ports": []any{80}}
	first := Compute(in)
	in.Parent = withStatus(t, in.Parent, first)
	if !Equal(first, in.Parent) {
		t.Fatalf("Equal() = false for the status just written")
	}
	in.Now = in.Now.Add(time.Hour)
	if second := Compute(in); !Equal(second, in.Parent) {
		t.Errorf("Equal() = false after recomputing with nothing changed but the clock")
	}
}

// conditionOf finds a condition in a status map.
func conditionOf(status map[string]any, typ string) map[string]any {
	for _, c := range status["conditions"].([]any) {
		if m := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

// ChildKinds reads back the kinds that Compute listed in status.children.
func TestChildKinds(t *testing.T) {
	parent := withStatus(t, obj(t, "{apiVersion: example.com/v1, kind: App, metadata: {name: app, namespace: default}}"), map[string]any{
		"children": []any{
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "a"},
			map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "a"},
			map[string]any{"apiVersion": "not/a/version", "kind": "Broken", "name": "x"},
			map[string]any{"apiVersion": "v1", "name": "no-kind"},
		},
	})
	want := []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}, {Group: "apps", Version: "v1", Kind: "Deployment"}}
	if diff := cmp.Diff(want, ChildKinds(parent)); diff != "" {
		t.Errorf("ChildKinds (-want +got):\n%s", diff)
	}
	if got := ChildKinds(obj(t, "{apiVersion: example.com/v1, kind: App, metadata: {name: app}}")); len(got) != 0 {
		t.Errorf("ChildKinds of a parent without status = %v", got)
	}
}

// A parent that is resumed has its Suspended condition removed: the status
// that holds one differs from the one computed without it.
func TestEqualSeesTheSuspendedCondition(t *testing.T) {
	in := baseInput(t)
	in.Suspended = &object.Suspension{Reason: object.ReasonSuspendedByAnnotation, Message: "suspended"}
	suspended := Compute(in)
	live := withStatus(t, in.Parent, suspended)
	resumed := Compute(in)
	delete(resumed, "state")
	resumed["state"] = suspended["state"]
	conds := []any{}
	for _, c := range suspended["conditions"].([]any) {
		if c.(map[string]any)["type"] != TypeSuspended {
			conds = append(conds, c)
		}
	}
	resumed["conditions"] = conds
	if Equal(resumed, live) {
		t.Error("Equal ignores a Suspended condition that is gone")
	}
}
