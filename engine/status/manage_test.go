package status

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestComputeChildModes: status.children names the mode of each child
// that is not full, and an observed child that does not exist says that
// the parent waits for it, naming its kind, namespace and name.
func TestComputeChildModes(t *testing.T) {
	in := baseInput(t)
	in.Rendered = objs(t, `
apiVersion: v1
kind: Secret
metadata: {name: pw, namespace: default, annotations: {loom.dev/manage: create-only}}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: shared, namespace: team, annotations: {loom.dev/manage: observe}}
`)
	in.Live = liveOf(obj(t, `
apiVersion: v1
kind: Secret
metadata: {name: pw, namespace: default}
`))
	in.Results = nil
	st := Compute(in)
	want := []any{
		map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "pw", "manage": "create-only",
			"ready": true, "status": "Current", "message": "Resource is always ready"},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "shared", "manage": "observe",
			"ready": false, "status": "NotFound", "message": "waiting for ConfigMap team/shared, which Loom observes (loom.dev/manage: observe) and never creates, to exist"},
	}
	if d := cmp.Diff(want, st["children"]); d != "" {
		t.Errorf("children (-want +got):\n%s", d)
	}
	conds := condsOf(t, st)
	if c := conds["Ready"]; c.Status != "False" || c.Reason != ReasonWaitingForDependency {
		t.Errorf("Ready = %+v, want False, %s", c, ReasonWaitingForDependency)
	}
	if c := conds["Degraded"]; c.Status != "False" {
		t.Errorf("Degraded = %+v, want False", c)
	}

	// A child that waits for the observed one (it looks it up) comes
	// after it in Ready's message: the observed object is what is missing.
	in.Waits = []Wait{{Message: "ConfigMap site waits for ConfigMap team/shared"}}
	if c := condsOf(t, Compute(in))["Ready"]; !strings.HasPrefix(c.Message, "waiting for ConfigMap team/shared, which Loom observes") {
		t.Errorf("Ready's message %q, want the observed ConfigMap first", c.Message)
	}
}
