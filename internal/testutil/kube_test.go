package testutil

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// The shipped MyResource CRD serves v1 beside v1alpha1 through Loom's
// conversion webhook; the suites install it serving only its storage
// version, with no conversion.
func TestStorageVersionOnly(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "crds", "myresources.example.loom.dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := StorageVersionOnly(raw)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Conversion any `json:"conversion"`
			Versions   []struct {
				Name    string `json:"name"`
				Storage bool   `json:"storage"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 || !crd.Spec.Versions[0].Storage || crd.Spec.Versions[0].Name != "v1alpha1" {
		t.Errorf("versions = %+v, want v1alpha1 alone, the storage version", crd.Spec.Versions)
	}
	if crd.Spec.Conversion != nil {
		t.Errorf("conversion = %v, want none", crd.Spec.Conversion)
	}
	one := []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  versions:\n  - name: v1\n    storage: true\n")
	if got, err := StorageVersionOnly(one); err != nil || string(got) != string(one) {
		t.Errorf("a CRD of one version: got %q, %v; want it as given", got, err)
	}
}
