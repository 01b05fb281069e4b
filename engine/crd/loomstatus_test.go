package crd

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/loom-operator/loom/engine/status"
)

// Every status.state Loom writes is in the CRD's enum: a state missing
// there makes every status write of a parent in that state fail (as
// Suspended did before it was added).
func TestStateEnumHoldsEveryState(t *testing.T) {
	var enum []string
	for _, v := range loomStatus()["state"].Enum {
		var s string
		if err := json.Unmarshal(v.Raw, &s); err != nil {
			t.Fatal(err)
		}
		enum = append(enum, s)
	}
	for _, st := range status.States {
		if !slices.Contains(enum, st) {
			t.Errorf("status.state %q is not in the CRD's enum %v", st, enum)
		}
	}
}
