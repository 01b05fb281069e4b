package migrate

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

var widgets = schema.GroupVersionResource{Group: "test.loom.dev", Version: "v1", Resource: "widgets"}

// cluster is a fake API server with a Widget CRD stored in v1alpha1 and
// v1 (v1 the storage version), applied by manager, and the parents named.
func cluster(t *testing.T, manager string, parents ...string) (*fake.FakeDynamicClient, *fakediscovery.FakeDiscovery) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.test.loom.dev", "generation": int64(2)},
		"spec": map[string]any{"group": "test.loom.dev", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "kind": "Widget"},
			"versions": []any{
				map[string]any{"name": "v1alpha1", "served": true, "storage": false},
				map[string]any{"name": "v1", "served": true, "storage": true},
			}},
		"status": map[string]any{"storedVersions": []any{"v1alpha1", "v1"}},
	}}
	crd.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationApply}})
	objs := []runtime.Object{crd}
	for _, p := range parents {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test.loom.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": p, "namespace": "shop", "resourceVersion": "1"},
		}})
	}
	client := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		crds: "CustomResourceDefinitionList", widgets: "WidgetList",
	}, objs...)
	disco := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	disco.Resources = []*metav1.APIResourceList{{GroupVersion: "test.loom.dev/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", Kind: "Widget", Namespaced: true, StorageVersionHash: StorageVersionHash("test.loom.dev", "v1", "Widget")},
	}}}
	return client, disco
}

// owns stands for crdinstall.OwnsCRD.
func owns(u *unstructured.Unstructured, manager string) bool {
	for _, f := range u.GetManagedFields() {
		if f.Manager == manager {
			return true
		}
	}
	return false
}

// Migrate rewrites every parent, a conflicting one after reading it again
// and a deleted one skipped, then shrinks storedVersions to the storage
// version; a CRD Loom did not install is left alone.
func TestMigrate(t *testing.T) {
	client, disco := cluster(t, "loom", "a", "b", "gone")
	conflicted := false
	client.PrependReactor("update", "widgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		switch {
		case obj.GetName() == "gone":
			return true, nil, apierrors.NewNotFound(widgets.GroupResource(), "gone")
		case obj.GetName() == "a" && !conflicted:
			conflicted = true
			return true, nil, apierrors.NewConflict(widgets.GroupResource(), "a", nil)
		}
		return false, nil, nil
	})
	m := New(client, disco, Options{FieldManager: "loom", Owns: owns})
	if err := m.Migrate(context.Background(), "widgets.test.loom.dev"); err != nil {
		t.Fatalf("Migrate() = %v", err)
	}
	var updated []string
	gets := 0
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "update":
			updated = append(updated, a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured).GetName())
		case "get":
			if a.GetResource() == widgets {
				gets++
			}
		}
	}
	if diff := cmp.Diff([]string{"a", "a", "b", "gone"}, updated); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if gets != 1 {
		t.Errorf("%d reads of a parent, want 1 (after the conflict)", gets)
	}
	crd, err := client.Resource(crds).Get(context.Background(), "widgets.test.loom.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	if diff := cmp.Diff([]string{"v1"}, stored); diff != "" {
		t.Errorf("storedVersions (-want +got):\n%s", diff)
	}

	other, disco := cluster(t, "kubectl", "a")
	if err := New(other, disco, Options{FieldManager: "loom", Owns: owns}).Migrate(context.Background(), "widgets.test.loom.dev"); err != nil {
		t.Fatalf("Migrate() = %v", err)
	}
	for _, a := range other.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("a CRD Loom did not install: %s %s", a.GetVerb(), a.GetResource())
		}
	}
}

// A failed write stops the migration before storedVersions shrinks: the
// next run starts again.
func TestMigrateStopsBeforeShrinking(t *testing.T) {
	client, disco := cluster(t, "loom", "a", "b")
	client.PrependReactor("update", "widgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(widgets.GroupResource(), "b", nil)
	})
	err := New(client, disco, Options{FieldManager: "loom", Owns: owns}).Migrate(context.Background(), "widgets.test.loom.dev")
	if err == nil {
		t.Fatal("Migrate() = nil, want the write's error")
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("storedVersions patched after a failed rewrite: %v", a)
		}
	}
}

// Where the API server serves storagemigration.k8s.io, Loom creates a
// StorageVersionMigration and waits for it instead of rewriting, then
// shrinks storedVersions.
func TestMigrateThroughTheMigrationAPI(t *testing.T) {
	client, disco := cluster(t, "loom", "a")
	disco.Resources = append(disco.Resources, &metav1.APIResourceList{GroupVersion: "storagemigration.k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "storageversionmigrations", Kind: "StorageVersionMigration"}}})
	client.PrependReactor("get", "storageversionmigrations", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := migrationObject("v1", widgets, 2)
		_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"type": "Succeeded", "status": "True"}}, "status", "conditions")
		return true, obj, nil
	})
	if err := New(client, disco, Options{FieldManager: "loom", Owns: owns}).Migrate(context.Background(), "widgets.test.loom.dev"); err != nil {
		t.Fatalf("Migrate() = %v", err)
	}
	var verbs []string
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" {
			verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	want := []string{"create storageversionmigrations", "patch customresourcedefinitions"}
	if diff := cmp.Diff(want, verbs); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}
