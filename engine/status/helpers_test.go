package status

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// obj turns an inline YAML fixture into an unstructured object, decoded the
// way the API machinery decodes (whole numbers are int64).
func obj(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("fixture is not YAML: %v\n%s", err, doc)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatalf("fixture is not an object: %v\n%s", err, doc)
	}
	return u
}

// objs decodes several fixtures.
func objs(t testing.TB, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		out = append(out, obj(t, d))
	}
	return out
}

// liveOf indexes live objects by Ref, as the controller does.
func liveOf(live ...*unstructured.Unstructured) map[object.Ref]*unstructured.Unstructured {
	m := make(map[object.Ref]*unstructured.Unstructured, len(live))
	for _, o := range live {
		m[object.RefOf(o)] = o
	}
	return m
}

// withStatus returns a copy of parent whose status is status, encoded and
// decoded as the API server would return it.
func withStatus(t testing.TB, parent *unstructured.Unstructured, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	p := parent.DeepCopy()
	p.Object["status"] = status
	raw, err := json.Marshal(p.Object)
	if err != nil {
		t.Fatalf("encode parent: %v", err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(raw); err != nil {
		t.Fatalf("decode parent: %v", err)
	}
	return out
}

// cond is the part of a condition most tests assert on.
type cond struct {
	Status, Reason, Message string
}

// condsOf summarizes status.conditions by type.
func condsOf(t testing.TB, status map[string]any) map[string]cond {
	t.Helper()
	out := map[string]cond{}
	items, ok := status["conditions"].([]any)
	if !ok {
		t.Fatalf("status.conditions is %T, want []any", status["conditions"])
	}
	for _, item := range items {
		m := item.(map[string]any)
		out[m["type"].(string)] = cond{m["status"].(string), m["reason"].(string), m["message"].(string)}
	}
	return out
}

// mustTime parses an RFC 3339 time.
func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parse time %q: %v", s, err)
	}
	return ts
}
