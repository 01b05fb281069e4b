package crdinstall

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/shard"
)

func TestOwnsCRD(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		fields      []metav1.ManagedFieldsEntry
		want        bool
	}{
		{name: "applied by loom", fields: []metav1.ManagedFieldsEntry{{Manager: "e2e", Operation: metav1.ManagedFieldsOperationApply}, {Manager: "loom", Operation: metav1.ManagedFieldsOperationApply}}, want: true},
		{name: "applied by someone else", fields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}},
		{name: "updated, not applied, by loom", fields: []metav1.ManagedFieldsEntry{{Manager: "loom", Operation: metav1.ManagedFieldsOperationUpdate}}},
		{name: "handed over", annotations: map[string]string{"loom.dev/adopt": "loom"}, fields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}, want: true},
		{name: "handed over to another Loom", annotations: map[string]string{"loom.dev/adopt": "loom-b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetAnnotations(tc.annotations)
			u.SetManagedFields(tc.fields)
			if got := OwnsCRD(u, "loom"); got != tc.want {
				t.Errorf("OwnsCRD = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSchemaChanged(t *testing.T) {
	base := func() *apiextv1.CustomResourceDefinition {
		return &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{
			Scope: apiextv1.NamespaceScoped,
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object"}}}},
		}}
	}
	tests := []struct {
		name string
		edit func(*apiextv1.CustomResourceDefinition)
		want bool
	}{
		{name: "same", edit: func(*apiextv1.CustomResourceDefinition) {}},
		{name: "printer columns only", edit: func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns = []apiextv1.CustomResourceColumnDefinition{{Name: "X", Type: "string", JSONPath: ".x"}}
		}},
		{name: "scope", edit: func(c *apiextv1.CustomResourceDefinition) { c.Spec.Scope = apiextv1.ClusterScoped }, want: true},
		{name: "schema", edit: func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Required = []string{"spec"}
		}, want: true},
		{name: "served", edit: func(c *apiextv1.CustomResourceDefinition) { c.Spec.Versions[0].Served = false }, want: true},
		{name: "version added", edit: func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions = append(c.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{Name: "v2", Served: true})
		}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gen := base()
			tc.edit(gen)
			if got := schemaChanged(base(), gen); got != tc.want {
				t.Errorf("schemaChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBreakingChangeErrorNamesParents(t *testing.T) {
	err := &BreakingChangeError{CRD: "widgets.test.loom.dev", Breaks: []crd.Break{
		{Kind: crd.FieldRemoved, Version: "v1", Path: ".spec.image", Detail: "field removed", Parents: []string{"shop/web"}},
		{Kind: crd.ScopeChanged, Detail: "scope changed from Namespaced to Cluster", Parents: []string{"shop/a", "shop/web"}, More: 4},
	}}
	want := "CRD widgets.test.loom.dev not applied: the schema change would break stored parents: " +
		"v1 .spec.image: field removed (parents: shop/web); scope changed from Namespaced to Cluster (parents: shop/a, shop/web and 4 more); " +
		"set schema.allowBreakingChanges: true in loom.yaml to apply it anyway"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("Error() (-want +got):\n%s", diff)
	}
}

func TestSchemaCondition(t *testing.T) {
	breaking := &BreakingChangeError{CRD: "widgets.test.loom.dev", Breaks: []crd.Break{
		{Kind: crd.ScopeChanged, Detail: "scope changed from Namespaced to Cluster", Parents: []string{"shop/web"}}}}
	tests := []struct {
		name string
		err  error
		want metav1.Condition
	}{
		{name: "installed", want: metav1.Condition{Type: "SchemaAccepted", Status: "True", Reason: "Installed", Message: "the set's CRD is installed"}},
		{name: "breaking", err: fmt.Errorf("wrapped: %w", breaking),
			want: metav1.Condition{Type: "SchemaAccepted", Status: "False", Reason: "BreakingChange", Message: "wrapped: " + breaking.Error()}},
		{name: "failed", err: errors.New("CRD widgets.test.loom.dev not established within 30s"),
			want: metav1.Condition{Type: "SchemaAccepted", Status: "False", Reason: "InstallFailed", Message: "CRD widgets.test.loom.dev not established within 30s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SchemaCondition(tc.err)); diff != "" {
				t.Errorf("SchemaCondition (-want +got):\n%s", diff)
			}
		})
	}
}

// allowBreakingChanges lets every break through but the removal of a
// version still in use.
func TestRefuses(t *testing.T) {
	field := crd.Break{Kind: crd.FieldRemoved, Version: "v1", Path: ".spec.a", Detail: "field removed", Parents: []string{"shop/web"}}
	stored := crd.Break{Kind: crd.VersionStillStored, Version: "v1alpha1", Detail: "version removed while still stored (status.storedVersions lists it)"}
	tests := []struct {
		name    string
		breaks  []crd.Break
		allowed bool
		want    bool
	}{
		{name: "nothing breaks"},
		{name: "a break", breaks: []crd.Break{field}, want: true},
		{name: "a break allowed", breaks: []crd.Break{field}, allowed: true},
		{name: "a version still stored", breaks: []crd.Break{stored}, want: true},
		{name: "a version still stored, allowed", breaks: []crd.Break{field, stored}, allowed: true, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := refuses(tc.breaks, tc.allowed); got != tc.want {
				t.Errorf("refuses = %v, want %v", got, tc.want)
			}
		})
	}
}

// The refusal of a version still in use says how to retire it, and does
// not offer allowBreakingChanges.
func TestBreakingChangeErrorRetiredVersion(t *testing.T) {
	err := &BreakingChangeError{CRD: "widgets.test.loom.dev", Breaks: []crd.Break{
		{Kind: crd.VersionStillStored, Version: "v1alpha1", Detail: "version removed while parents were last written in it (managedFields)", Parents: []string{"shop/web"}},
	}}
	want := "CRD widgets.test.loom.dev not applied: the change would break stored parents: " +
		"v1alpha1: version removed while parents were last written in it (managedFields) (parents: shop/web); " +
		crd.RetiredAdvice("v1alpha1")
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("Error() (-want +got):\n%s", diff)
	}
}

// heldSet is a sharded replica holding fixed buckets.
type heldSet shard.Set

func (h heldSet) Held() shard.Set { return shard.Set(h) }

// One replica migrates: without sharding, this one; sharded, the holder
// of bucket 0, and only while it holds it.
func TestSingleWriter(t *testing.T) {
	if singleWriter(nil) != nil {
		t.Error("not sharded: want no gate")
	}
	for _, tc := range []struct {
		held shard.Set
		want bool
	}{
		{held: shard.Set(0).Add(0), want: true},
		{held: shard.Set(0).Add(0).Add(5), want: true},
		{held: shard.Set(0).Add(1)},
		{held: shard.Set(0)},
	} {
		if got := singleWriter(heldSet(tc.held))(); got != tc.want {
			t.Errorf("holding %s: %v, want %v", tc.held, got, tc.want)
		}
	}
}
