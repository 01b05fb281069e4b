package crd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// writtenIn gives a stored Widget managedFields entries, each as
// "apiVersion@time", the last written at the latest time.
func writtenIn(obj map[string]any, entries ...string) map[string]any {
	var mf []any
	for _, e := range entries {
		version, at, _ := strings.Cut(e, "@")
		mf = append(mf, map[string]any{"manager": "kubectl", "operation": "Update", "apiVersion": "test.loom.dev/" + version, "time": at})
	}
	obj["metadata"].(map[string]any)["managedFields"] = mf
	return obj
}

// Removing a version is refused, whatever loom.yaml allows, while the
// live CRD's status.storedVersions lists it or a stored parent was last
// written in it; removing one nothing uses stays an ordinary break;
// changing which version is storage breaks nothing.
func TestBreakingRetiredVersion(t *testing.T) {
	const t1, t2 = "2026-01-01T10:00:00Z", "2026-01-02T10:00:00Z"
	two := func(t *testing.T, stored ...string) *apiextv1.CustomResourceDefinition {
		c := testCRD(t, "Namespaced", "v1alpha1", baseSpec, "v1", baseSpec)
		c.Status.StoredVersions = stored
		return c
	}
	onlyV1 := func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) }
	old := func(t *testing.T) map[string]any { return writtenIn(parent(t, "old", `{}`), "v1@"+t1, "v1alpha1@"+t2) }
	moved := func(t *testing.T) map[string]any {
		return writtenIn(parent(t, "moved", `{}`), "v1alpha1@"+t1, "v1@"+t2)
	}
	tests := []struct {
		name   string
		old    *apiextv1.CustomResourceDefinition
		new    *apiextv1.CustomResourceDefinition
		stored []map[string]any
		want   []Break
	}{{
		name: "still in storedVersions: every parent may be stored in it",
		old:  two(t, "v1alpha1", "v1"), new: onlyV1(t), stored: []map[string]any{old(t), moved(t)},
		want: []Break{{Kind: VersionStillStored, Version: "v1alpha1", Detail: "version removed while still stored (status.storedVersions lists it)", Parents: []string{"shop/moved", "shop/old"}}},
	}, {
		name: "in storedVersions, nothing stored",
		old:  two(t, "v1alpha1", "v1"), new: onlyV1(t),
		want: []Break{{Kind: VersionStillStored, Version: "v1alpha1", Detail: "version removed while still stored (status.storedVersions lists it)"}},
	}, {
		name: "migrated, but a parent was last written in it",
		old:  two(t, "v1"), new: onlyV1(t), stored: []map[string]any{old(t), moved(t)},
		want: []Break{{Kind: VersionStillStored, Version: "v1alpha1", Detail: "version removed while parents were last written in it (managedFields)", Parents: []string{"shop/old"}}},
	}, {
		name: "migrated and rewritten: an ordinary break, for its clients",
		old:  two(t, "v1"), new: onlyV1(t), stored: []map[string]any{moved(t)},
		want: []Break{{Kind: VersionRemoved, Version: "v1alpha1", Detail: "version removed", Parents: []string{"shop/moved"}}},
	}, {
		name: "storage switched",
		old:  two(t, "v1alpha1"),
		new: func() *apiextv1.CustomResourceDefinition {
			c := two(t)
			c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = false, true
			return c
		}(),
		stored: []map[string]any{old(t)},
	}, {
		name: "no longer served but kept: not retired",
		old:  two(t, "v1alpha1", "v1"),
		new: func() *apiextv1.CustomResourceDefinition {
			c := two(t)
			c.Spec.Versions[0].Served = false
			return c
		}(),
		stored: []map[string]any{old(t)},
		want:   []Break{{Kind: VersionRemoved, Version: "v1alpha1", Detail: "version no longer served", Parents: []string{"shop/old"}}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Breaking(tc.old, tc.new, tc.stored, nil)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Breaking (-want +got):\n%s", diff)
			}
			for _, b := range got {
				if b.Overridable() == (b.Kind == VersionStillStored) {
					t.Errorf("%s: Overridable() = %v", b.Kind, b.Overridable())
				}
			}
		})
	}
}

func TestBreakStringWithoutParents(t *testing.T) {
	b := Break{Kind: VersionStillStored, Version: "v1alpha1", Detail: "version removed while still stored (status.storedVersions lists it)"}
	if got, want := b.String(), "v1alpha1: version removed while still stored (status.storedVersions lists it)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
