package migrate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The StorageVersionMigration names the resource as each API version
// wants it, and is named after the resource, version and generation.
func TestMigrationObject(t *testing.T) {
	for _, tc := range []struct {
		api  string
		want map[string]any
	}{
		{api: "v1", want: map[string]any{"group": "test.loom.dev", "resource": "widgets"}},
		{api: "v1beta1", want: map[string]any{"group": "test.loom.dev", "resource": "widgets"}},
		{api: "v1alpha1", want: map[string]any{"group": "test.loom.dev", "resource": "widgets", "version": "v1"}},
	} {
		obj := migrationObject(tc.api, widgets, 3)
		if obj.GetAPIVersion() != "storagemigration.k8s.io/"+tc.api || obj.GetName() != "loom-widgets.test.loom.dev-v1-3" {
			t.Errorf("%s: %s %s", tc.api, obj.GetAPIVersion(), obj.GetName())
		}
		got, _, _ := unstructured.NestedMap(obj.Object, "spec", "resource")
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: spec.resource (-want +got):\n%s", tc.api, diff)
		}
	}
}

func TestMigrationState(t *testing.T) {
	with := func(conds ...map[string]any) *unstructured.Unstructured {
		var cs []any
		for _, c := range conds {
			cs = append(cs, c)
		}
		obj := &unstructured.Unstructured{Object: map[string]any{}}
		if cs != nil {
			_ = unstructured.SetNestedSlice(obj.Object, cs, "status", "conditions")
		}
		return obj
	}
	for _, tc := range []struct {
		name      string
		obj       *unstructured.Unstructured
		state     string
		wantInMsg string
	}{
		{name: "not taken up", obj: with()},
		{name: "running", obj: with(map[string]any{"type": "Running", "status": "True"}), state: "Running"},
		{name: "succeeded after running", obj: with(map[string]any{"type": "Running", "status": "False"}, map[string]any{"type": "Succeeded", "status": "True"}), state: "Succeeded"},
		{name: "failed", obj: with(map[string]any{"type": "Failed", "status": "True", "message": "conversion webhook down"}), state: "Failed", wantInMsg: "conversion webhook down"},
	} {
		state, msg := migrationState(tc.obj)
		if state != tc.state || msg != tc.wantInMsg {
			t.Errorf("%s: migrationState = %q, %q; want %q, %q", tc.name, state, msg, tc.state, tc.wantInMsg)
		}
	}
}
