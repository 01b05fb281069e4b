//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/test/env"
)

// crd.Validate, which every command runs on a set's CRD at load, refuses
// what the API server refuses, with the same field: the CRDs of item 22
// (a type that does not exist, a default outside its enum) are refused by
// both, and a good one by neither.
func TestCRDValidationMatchesTheAPIServer(t *testing.T) {
	e := env.From(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tt := range []struct {
		name, spec, field string
	}{
		{name: "integr", spec: `{type: object, properties: {replicas: {type: integr}}}`, field: "properties[spec].properties[replicas].type"},
		{name: "enumdefault", spec: `{type: object, properties: {size: {type: string, enum: [small, large], default: medium}}}`, field: "properties[spec].properties[size].default"},
		{name: "good", spec: `{type: object, properties: {size: {type: string, enum: [small, large], default: small}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var spec apiextv1.JSONSchemaProps
			if err := yaml.Unmarshal([]byte(tt.spec), &spec); err != nil {
				t.Fatal(err)
			}
			group := "validate.gen.test.loom.dev"
			def := &apiextv1.CustomResourceDefinition{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
				ObjectMeta: metav1.ObjectMeta{Name: tt.name + "s." + group},
				Spec: apiextv1.CustomResourceDefinitionSpec{
					Group: group, Scope: apiextv1.NamespaceScoped,
					Names: apiextv1.CustomResourceDefinitionNames{Plural: tt.name + "s", Singular: tt.name, Kind: strings.ToUpper(tt.name[:1]) + tt.name[1:], ListKind: strings.ToUpper(tt.name[:1]) + tt.name[1:] + "List"},
					Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
						Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
							Properties: map[string]apiextv1.JSONSchemaProps{"spec": spec}}}}},
				},
			}
			ours := crd.Validate(ctx, def)
			obj, err := crd.Unstructured(def)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { deleteCRD(t, def.Name) })
			theirs := e.ApplyCRD(ctx, raw)
			if tt.field == "" {
				if ours != nil || theirs != nil {
					t.Fatalf("a good CRD: crd.Validate = %v, the API server = %v; want both to accept it", ours, theirs)
				}
				return
			}
			if ours == nil || theirs == nil || !strings.Contains(ours.Error(), tt.field) || !strings.Contains(theirs.Error(), tt.field) {
				t.Fatalf("want both to refuse %s:\ncrd.Validate: %v\nthe API server: %v", tt.field, ours, theirs)
			}
		})
	}
}
