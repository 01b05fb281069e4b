package crd

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// testCRD builds a CRD of widgets.test.loom.dev whose versions (name →
// spec schema in YAML) are all served; the first is stored.
func testCRD(t *testing.T, scope string, versions ...string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	c := &apiextv1.CustomResourceDefinition{}
	c.Name = "widgets.test.loom.dev"
	c.Spec.Group = "test.loom.dev"
	c.Spec.Scope = apiextv1.ResourceScope(scope)
	c.Spec.Names = apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"}
	for i := 0; i < len(versions); i += 2 {
		spec := &apiextv1.JSONSchemaProps{}
		if err := yaml.Unmarshal([]byte(versions[i+1]), spec); err != nil {
			t.Fatalf("parse schema of %s: %v", versions[i], err)
		}
		root := &apiextv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
			"spec":   *spec,
			"status": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{"url": {Type: "string"}}},
		}}
		c.Spec.Versions = append(c.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{
			Name: versions[i], Served: true, Storage: i == 0,
			Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: root},
		})
	}
	return c
}

// parent is a stored Widget in namespace shop with the spec in YAML.
func parent(t *testing.T, name, spec string) map[string]any {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(spec), &obj); err != nil {
		t.Fatalf("parse spec of %s: %v", name, err)
	}
	return map[string]any{
		"apiVersion": "test.loom.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "shop", "uid": "u-" + name, "resourceVersion": "7"},
		"spec":     obj,
		"status":   map[string]any{"url": "http://" + name, "stale": true},
	}
}

const baseSpec = `
type: object
properties:
  image: {type: string}
  replicas: {type: number}
  tier: {type: string, enum: [frontend, backend]}
  size: {type: string}
  ports:
    type: array
    items:
      type: object
      properties:
        name: {type: string}
        port: {type: integer}
  extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
  env: {type: object, additionalProperties: {type: string}}
`

// edit returns baseSpec with old replaced by new.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(baseSpec, old) {
		t.Fatalf("baseSpec has no %q", old)
	}
	return strings.Replace(baseSpec, old, new, 1)
}

// refuseBigReplicas stands for the new schema's validation (the
// Admitter): it refuses replicas above 5, in the API server's words.
func refuseBigReplicas(obj map[string]any) error {
	spec, _ := obj["spec"].(map[string]any)
	if r, ok := spec["replicas"].(float64); ok && r > 5 {
		return fmt.Errorf("spec.replicas: Invalid value: %v: spec.replicas in body should be less than or equal to 5", r)
	}
	return nil
}

func TestBreaking(t *testing.T) {
	web := func(t *testing.T) map[string]any {
		return parent(t, "web", `{image: nginx, replicas: 2, ports: [{name: http, port: 80}]}`)
	}
	big := func(t *testing.T) map[string]any {
		return parent(t, "big", `{image: nginx, replicas: 9, extra: {x: 1}, env: {A: b}}`)
	}
	tests := []struct {
		name   string
		old    func(t *testing.T) *apiextv1.CustomResourceDefinition
		new    func(t *testing.T) *apiextv1.CustomResourceDefinition
		stored []func(t *testing.T) map[string]any
		admit  AdmitFunc
		want   []Break
	}{{
		name:   "same schema",
		old:    func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new:    func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		stored: []func(t *testing.T) map[string]any{web, big},
	}, {
		name: "removed field a parent sets",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "  image: {type: string}\n", ""))
		},
		stored: []func(t *testing.T) map[string]any{web, big},
		want:   []Break{{Kind: FieldRemoved, Version: "v1", Path: ".spec.image", Detail: "field removed", Parents: []string{"shop/big", "shop/web"}}},
	}, {
		name: "removed field no parent sets",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "  size: {type: string}\n", ""))
		},
		stored: []func(t *testing.T) map[string]any{web, big},
	}, {
		name: "removed field in list items",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "        name: {type: string}\n", ""))
		},
		stored: []func(t *testing.T) map[string]any{web, big},
		want:   []Break{{Kind: FieldRemoved, Version: "v1", Path: ".spec.ports[*].name", Detail: "field removed", Parents: []string{"shop/web"}}},
	}, {
		name: "removed field kept by a free-form object",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "type: object\n", "type: object\nx-kubernetes-preserve-unknown-fields: true\n")+"\n")
		},
		stored: []func(t *testing.T) map[string]any{web},
	}, {
		name: "removed status field",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			c := testCRD(t, "Namespaced", "v1", baseSpec)
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"] = apiextv1.JSONSchemaProps{Type: "object"}
			return c
		},
		stored: []func(t *testing.T) map[string]any{web},
	}, {
		name: "number became integer",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "replicas: {type: number}", "replicas: {type: integer}"))
		},
		stored: []func(t *testing.T) map[string]any{web, big},
		want: []Break{{Kind: TypeNarrowed, Version: "v1", Path: ".spec.replicas", Detail: "type narrowed: number became integer",
			Parents: []string{"shop/big", "shop/web"}}},
	}, {
		name: "integer became number (wider)",
		old: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "replicas: {type: number}", "replicas: {type: integer}"))
		},
		new:    func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		stored: []func(t *testing.T) map[string]any{web, big},
	}, {
		name: "string became enum",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "image: {type: string}", "image: {type: string, enum: [nginx]}"))
		},
		stored: []func(t *testing.T) map[string]any{web},
		want: []Break{{Kind: TypeNarrowed, Version: "v1", Path: ".spec.image", Detail: `type narrowed: any string became enum ["nginx"]`,
			Parents: []string{"shop/web"}}},
	}, {
		name: "enum lost a value",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "enum: [frontend, backend]", "enum: [frontend]"))
		},
		stored: []func(t *testing.T) map[string]any{func(t *testing.T) map[string]any { return parent(t, "api", `{tier: backend}`) }, web},
		want: []Break{{Kind: TypeNarrowed, Version: "v1", Path: ".spec.tier", Detail: `type narrowed: enum lost ["backend"]`,
			Parents: []string{"shop/api"}}},
	}, {
		name: "enum gained a value (wider)",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "enum: [frontend, backend]", "enum: [frontend, backend, batch]"))
		},
		stored: []func(t *testing.T) map[string]any{func(t *testing.T) map[string]any { return parent(t, "api", `{tier: backend}`) }},
	}, {
		name: "free-form object became closed",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "extra: {type: object, x-kubernetes-preserve-unknown-fields: true}",
				"extra: {type: object, properties: {y: {type: integer}}}"))
		},
		stored: []func(t *testing.T) map[string]any{web, big},
		want: []Break{{Kind: TypeNarrowed, Version: "v1", Path: ".spec.extra",
			Detail: "type narrowed: free-form object became closed: fields not in its properties are pruned", Parents: []string{"shop/big"}}},
	}, {
		name: "map became closed",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "env: {type: object, additionalProperties: {type: string}}",
				"env: {type: object, properties: {B: {type: string}}}"))
		},
		stored: []func(t *testing.T) map[string]any{web, big},
		want: []Break{{Kind: TypeNarrowed, Version: "v1", Path: ".spec.env",
			Detail: "type narrowed: free-form object became closed: fields not in its properties are pruned", Parents: []string{"shop/big"}}},
	}, {
		name: "new required field without default",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", baseSpec+"required: [size]\n")
		},
		stored: []func(t *testing.T) map[string]any{web, big, func(t *testing.T) map[string]any { return parent(t, "sized", `{size: 1Gi}`) }},
		want: []Break{{Kind: RequiredAdded, Version: "v1", Path: ".spec.size", Detail: "newly required, with no default",
			Parents: []string{"shop/big", "shop/web"}}},
	}, {
		name: "new required field with a default",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "size: {type: string}", `size: {type: string, default: "1Gi"}`)+"required: [size]\n")
		},
		stored: []func(t *testing.T) map[string]any{web},
	}, {
		name: "new required field inside list items",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v1", edit(t, "        port: {type: integer}\n", "        port: {type: integer}\n        protocol: {type: string}\n      required: [protocol]\n"))
		},
		stored: []func(t *testing.T) map[string]any{web, big},
		want: []Break{{Kind: RequiredAdded, Version: "v1", Path: ".spec.ports[*].protocol", Detail: "newly required, with no default",
			Parents: []string{"shop/web"}}},
	}, {
		name:   "scope changed",
		old:    func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new:    func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Cluster", "v1", baseSpec) },
		stored: []func(t *testing.T) map[string]any{web, big},
		want:   []Break{{Kind: ScopeChanged, Detail: "scope changed from Namespaced to Cluster", Parents: []string{"shop/big", "shop/web"}}},
	}, {
		name:   "version renamed",
		old:    func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new:    func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v2", baseSpec) },
		stored: []func(t *testing.T) map[string]any{web},
		want:   []Break{{Kind: VersionRemoved, Version: "v1", Detail: "version removed", Parents: []string{"shop/web"}}},
	}, {
		name: "version no longer served",
		old: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v2", baseSpec, "v1", baseSpec)
		},
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			c := testCRD(t, "Namespaced", "v2", baseSpec, "v1", baseSpec)
			c.Spec.Versions[1].Served = false
			return c
		},
		stored: []func(t *testing.T) map[string]any{web},
		want:   []Break{{Kind: VersionRemoved, Version: "v1", Detail: "version no longer served", Parents: []string{"shop/web"}}},
	}, {
		name: "version added",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Namespaced", "v2", baseSpec, "v1", baseSpec)
		},
		stored: []func(t *testing.T) map[string]any{web},
	}, {
		name:   "tightened constraint a parent violates",
		old:    func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new:    func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		stored: []func(t *testing.T) map[string]any{web, big},
		admit:  refuseBigReplicas,
		want: []Break{{Kind: ConstraintViolated, Version: "v1",
			Detail:  "invalid under the new schema: spec.replicas: Invalid value: 9: spec.replicas in body should be less than or equal to 5",
			Parents: []string{"shop/big"}}},
	}, {
		name: "nothing stored",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new: func(t *testing.T) *apiextv1.CustomResourceDefinition {
			return testCRD(t, "Cluster", "v2", "type: object")
		},
		admit: func(map[string]any) error { return errors.New("refused") },
	}, {
		name: "parents capped",
		old:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Namespaced", "v1", baseSpec) },
		new:  func(t *testing.T) *apiextv1.CustomResourceDefinition { return testCRD(t, "Cluster", "v1", baseSpec) },
		stored: func() []func(t *testing.T) map[string]any {
			var ps []func(t *testing.T) map[string]any
			for i := range 7 {
				ps = append(ps, func(t *testing.T) map[string]any { return parent(t, fmt.Sprintf("p%d", i), `{}`) })
			}
			return ps
		}(),
		want: []Break{{Kind: ScopeChanged, Detail: "scope changed from Namespaced to Cluster",
			Parents: []string{"shop/p0", "shop/p1", "shop/p2", "shop/p3", "shop/p4"}, More: 2}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stored []map[string]any
			for _, p := range tc.stored {
				stored = append(stored, p(t))
			}
			got := Breaking(tc.old(t), tc.new(t), stored, tc.admit)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Breaking (-want +got):\n%s", diff)
			}
		})
	}
}

// The validation sees the parent as a client would create it again at the
// new storage version: no status, no server-set metadata.
func TestBreakingAdmitsAsCreated(t *testing.T) {
	var got []map[string]any
	admit := func(obj map[string]any) error { got = append(got, obj); return nil }
	stored := []map[string]any{parent(t, "web", `{image: nginx}`)}
	stored[0]["metadata"].(map[string]any)["labels"] = map[string]any{"team": "a"}
	Breaking(testCRD(t, "Namespaced", "v1", baseSpec), testCRD(t, "Namespaced", "v2", baseSpec, "v1", baseSpec), stored, admit)
	want := []map[string]any{{
		"apiVersion": "test.loom.dev/v2", "kind": "Widget",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"team": "a"}},
		"spec":     map[string]any{"image": "nginx"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	if _, ok := stored[0]["status"]; !ok {
		t.Error("Breaking changed the stored parent")
	}
}

func TestBreakString(t *testing.T) {
	tests := []struct {
		b    Break
		want string
	}{{
		b:    Break{Kind: FieldRemoved, Version: "v1", Path: ".spec.image", Detail: "field removed", Parents: []string{"shop/web"}},
		want: "v1 .spec.image: field removed (parents: shop/web)",
	}, {
		b:    Break{Kind: ScopeChanged, Detail: "scope changed from Namespaced to Cluster", Parents: []string{"a", "b"}, More: 3},
		want: "scope changed from Namespaced to Cluster (parents: a, b and 3 more)",
	}, {
		b:    Break{Kind: ConstraintViolated, Version: "v1", Detail: "invalid under the new schema: spec.owner: Required value", Parents: []string{"shop/web"}},
		want: "v1: invalid under the new schema: spec.owner: Required value (parents: shop/web)",
	}}
	for _, tc := range tests {
		if got := tc.b.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
