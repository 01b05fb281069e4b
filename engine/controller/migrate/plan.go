package migrate

import (
	"crypto/sha256"
	"encoding/base64"
	"slices"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Plan says whether a CRD's stored parents must move: the versions in its
// status.storedVersions other than its storage version (stale, in order),
// and that storage version. Nothing is stale when the CRD has no storage
// version yet.
func Plan(c *apiextv1.CustomResourceDefinition) (storage string, stale []string) {
	for _, v := range c.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	if storage == "" {
		return "", nil
	}
	for _, v := range c.Status.StoredVersions {
		if v != storage && !slices.Contains(stale, v) {
			stale = append(stale, v)
		}
	}
	return storage, stale
}

// StorageVersionHash is the storageVersionHash discovery publishes for a
// resource stored as group/version, kind: the API server's own
// (k8s.io/apiserver's discovery.StorageVersionHash), which changes when
// the storage version does.
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// migrationAPI is the version of storagemigration.k8s.io to use among
// those the API server serves (v1, then v1beta1, then v1alpha1), or "".
func migrationAPI(groups *metav1.APIGroupList) string {
	if groups == nil {
		return ""
	}
	for _, g := range groups.Groups {
		if g.Name != migrationGroup {
			continue
		}
		for _, want := range []string{"v1", "v1beta1", "v1alpha1"} {
			for _, v := range g.Versions {
				if v.Version == want {
					return want
				}
			}
		}
	}
	return ""
}
