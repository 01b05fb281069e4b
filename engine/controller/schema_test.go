package controller

import (
	"testing"

	"github.com/loom-operator/loom/engine/controller/crdinstall"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/rollout"
)

// The SchemaAccepted condition joins the TemplateSet's rollout conditions.
func TestTemplateSetStatusCarriesSchemaCondition(t *testing.T) {
	folder := &render.Set{Dir: "/sets/app"}
	cond := crdinstall.SchemaCondition(&crdinstall.BreakingChangeError{CRD: "widgets.test.loom.dev"})
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
