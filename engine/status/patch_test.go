package status

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestComputePatchMissing: a patch child whose object does not exist
// makes the parent wait for it (Loom never creates it), first in Ready's
// message, and status.children says its mode.
func TestComputePatchMissing(t *testing.T) {
	in := baseInput(t)
	in.Rendered = objs(t, `
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {team: a}, annotations: {loom.dev/manage: patch}}
`)
	in.Live = nil
	in.Results = nil
	st := Compute(in)
	want := []any{
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "name": "team-a", "manage": "patch",
			"ready": false, "status": "NotFound", "message": "waiting for Namespace team-a, which Loom patches (loom.dev/manage: patch) and never creates, to exist"},
	}
	if d := cmp.Diff(want, st["children"]); d != "" {
		t.Errorf("children (-want +got):\n%s", d)
	}
	conds := condsOf(t, st)
	if c := conds["Ready"]; c.Status != "False" || c.Reason != ReasonWaitingForDependency || !strings.HasPrefix(c.Message, "waiting for Namespace team-a") {
		t.Errorf("Ready = %+v, want False, %s, naming the Namespace", c, ReasonWaitingForDependency)
	}
}
