package migrate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlan(t *testing.T) {
	crdOf := func(storage string, stored ...string) *apiextv1.CustomResourceDefinition {
		c := &apiextv1.CustomResourceDefinition{}
		for _, v := range []string{"v1alpha1", "v1"} {
			c.Spec.Versions = append(c.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == storage})
		}
		c.Status.StoredVersions = stored
		return c
	}
	tests := []struct {
		name        string
		crd         *apiextv1.CustomResourceDefinition
		wantStorage string
		wantStale   []string
	}{
		{name: "one stored version", crd: crdOf("v1", "v1"), wantStorage: "v1"},
		{name: "storage switched", crd: crdOf("v1", "v1alpha1", "v1"), wantStorage: "v1", wantStale: []string{"v1alpha1"}},
		{name: "switched back before migrating", crd: crdOf("v1alpha1", "v1alpha1", "v1"), wantStorage: "v1alpha1", wantStale: []string{"v1"}},
		{name: "storedVersions not yet written", crd: crdOf("v1"), wantStorage: "v1"},
		{name: "no storage version", crd: crdOf("", "v1alpha1")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			storage, stale := Plan(tc.crd)
			if storage != tc.wantStorage {
				t.Errorf("storage = %q, want %q", storage, tc.wantStorage)
			}
			if diff := cmp.Diff(tc.wantStale, stale); diff != "" {
				t.Errorf("stale (-want +got):\n%s", diff)
			}
		})
	}
}

// The hash is the API server's: the value discovery shows for
// apps/v1 Deployment on any cluster.
func TestStorageVersionHash(t *testing.T) {
	if got, want := StorageVersionHash("apps", "v1", "Deployment"), "8aSe+NMegvE="; got != want {
		t.Errorf("StorageVersionHash(apps/v1 Deployment) = %q, want %q", got, want)
	}
}

func TestMigrationAPI(t *testing.T) {
	group := func(versions ...string) *metav1.APIGroupList {
		g := metav1.APIGroup{Name: "storagemigration.k8s.io"}
		for _, v := range versions {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{Version: v})
		}
		return &metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "apps"}, g}}
	}
	for _, tc := range []struct {
		groups *metav1.APIGroupList
		want   string
	}{
		{groups: nil}, {groups: group()}, {groups: group("v1alpha1"), want: "v1alpha1"},
		{groups: group("v1alpha1", "v1beta1"), want: "v1beta1"}, {groups: group("v1beta1", "v1"), want: "v1"},
	} {
		if got := migrationAPI(tc.groups); got != tc.want {
			t.Errorf("migrationAPI(%v) = %q, want %q", tc.groups, got, tc.want)
		}
	}
}
