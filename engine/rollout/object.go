package rollout

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FromObject reads the State and the Controls of a TemplateSet object as
// Loom writes it: the state from its status, the controls from its spec.
// A status that does not decode is an error, never a zero State: a zero
// State is a first start, which makes the folder's revision stable.
func FromObject(ts *unstructured.Unstructured) (State, Controls, error) {
	var s State
	if raw, ok := ts.Object["status"].(map[string]any); ok {
		b, err := json.Marshal(raw)
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil {
			return State{}, Controls{}, fmt.Errorf("read the status of TemplateSet %s: %w", ts.GetName(), err)
		}
	}
	var c Controls
	c.Paused, _, _ = unstructured.NestedBool(ts.Object, "spec", "paused")
	c.Resume, _, _ = unstructured.NestedString(ts.Object, "spec", "resume")
	c.Promote, _, _ = unstructured.NestedString(ts.Object, "spec", "promote")
	c.Abort, _, _ = unstructured.NestedString(ts.Object, "spec", "abort")
	c.Suspend = Suspended(ts)
	return s, c, nil
}

// Suspended reports whether obj, a TemplateSet as an informer hands it,
// has spec.suspend true; anything else is not suspended. It reads nothing
// else, so a status it cannot decode never resumes the set.
func Suspended(obj any) bool {
	ts, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return false
	}
	v, _, _ := unstructured.NestedBool(ts.Object, "spec", "suspend")
	return v
}
