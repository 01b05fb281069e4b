package rbac

import (
	"slices"
	"testing"
)

// TestPatchedKinds: a kind that the templates only patch (every document
// of it is loom.dev/manage: patch or observe, literally) is read and
// patched, never created or deleted, in every namespace its lookup
// declaration may read: a patch child is someone else's object there.
func TestPatchedKinds(t *testing.T) {
	s := loadSet(t, map[string]string{
		"loom.yaml": "parent: {apiVersion: shop.example/v1, kind: Shop}\nlookups:\n" +
			"  - {apiVersion: v1, kind: Namespace}\n  - {apiVersion: v1, kind: ServiceAccount, namespaces: [platform]}\n",
		"patched.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels: {a: b}\n  annotations:\n    loom.dev/manage: patch\n---\n" +
			"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: builder\n  namespace: platform\n  annotations:\n    loom.dev/manage: patch\n    team: a\n",
	})
	set, err := FromSet(s)
	if err != nil {
		t.Fatal(err)
	}
	got := lines(Generate([]Set{set}, Options{Namespace: "shop"}))
	for _, want := range []string{
		"* '' namespaces get,list,watch,patch",
		"shop '' serviceaccounts get,list,watch,patch",
		"platform '' serviceaccounts get,list,watch,patch",
		"shop shop.example shops get,list,watch,patch", // the loom.dev/patches record and finalizer
	} {
		if !slices.Contains(got, want) {
			t.Errorf("rules lack %q:\n%v", want, got)
		}
	}
	for _, l := range got {
		if l == "* '' namespaces get,list,watch,create,patch,delete" || l == "shop '' serviceaccounts get,list,watch,create,patch,delete" {
			t.Errorf("a patched-only kind may be created and deleted: %s", l)
		}
	}
}
