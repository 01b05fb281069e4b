package rbac

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestObservedKinds: a kind that the templates only observe (every
// document of it is loom.dev/manage: observe, literally) is read, and
// patched only to release an object that was Loom's child before its
// switch to observe: Loom never creates or deletes one. The reads of an
// observed child are those of its lookup declaration. A kind that one
// template also renders in full keeps every verb.
func TestObservedKinds(t *testing.T) {
	s := loadSet(t, map[string]string{
		"loom.yaml": "parent: {apiVersion: shop.example/v1, kind: Shop}\nlookups:\n" +
			"  - {apiVersion: v1, kind: Namespace}\n  - {apiVersion: v1, kind: ConfigMap, namespaces: [platform]}\n",
		"observed.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: platform\n  annotations:\n    loom.dev/manage: observe\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: platform\n  annotations:\n    loom.dev/manage: observe\n",
		"full.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\ndata: {a: b}\n",
	})
	set, err := FromSet(s)
	if err != nil {
		t.Fatal(err)
	}
	got := lines(Generate([]Set{set}, Options{Namespace: "shop"}))
	for _, want := range []string{
		"* '' namespaces get,list,watch,patch",
		"shop '' configmaps get,list,watch,create,patch,delete",
		"platform '' configmaps get,list,watch",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("rules lack %q", want)
		}
	}
	if d := cmp.Diff(true, !slices.ContainsFunc(got, func(l string) bool { return l == "* '' namespaces get,list,watch,create,patch,delete" })); d != "" {
		t.Errorf("an observed-only kind may be created and deleted:\n%v", got)
	}
}
