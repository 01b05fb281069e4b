package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/render"
)

// widgetCRD is a Widget CRD whose spec has the given fields, all strings.
func widgetCRD(t *testing.T, fields ...string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	props := map[string]apiextv1.JSONSchemaProps{}
	for _, f := range fields {
		props[f] = apiextv1.JSONSchemaProps{Type: "string"}
	}
	return &apiextv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.test.loom.dev"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "test.loom.dev", Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}}}}}},
		},
	}
}

// fakeCluster serves the live CRD (none when nil), applied by manager, and
// the parents given in YAML.
func fakeCluster(t *testing.T, live *apiextv1.CustomResourceDefinition, manager string, parents ...string) func(kubeTarget) (dynamic.Interface, error) {
	t.Helper()
	var objs []runtime.Object
	if live != nil {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationApply}})
		objs = append(objs, obj)
	}
	for _, p := range parents {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(p), &obj.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, obj)
	}
	client := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}: "CustomResourceDefinitionList",
		{Group: "test.loom.dev", Version: "v1", Resource: "widgets"}:                          "WidgetList",
	}, objs...)
	return func(kubeTarget) (dynamic.Interface, error) { return client, nil }
}

// withStoredAlpha adds a served v1alpha1 to c, still in its
// status.storedVersions.
func withStoredAlpha(c *apiextv1.CustomResourceDefinition) *apiextv1.CustomResourceDefinition {
	v := *c.Spec.Versions[0].DeepCopy()
	v.Name, v.Storage = "v1alpha1", false
	c.Spec.Versions = append(c.Spec.Versions, v)
	c.Status.StoredVersions = []string{"v1alpha1", "v1"}
	return c
}

const webWidget = `{apiVersion: test.loom.dev/v1, kind: Widget, metadata: {name: web, namespace: shop}, spec: {image: nginx, size: 1Gi}}`

func TestCRDCheck(t *testing.T) {
	tests := []struct {
		name    string
		live    *apiextv1.CustomResourceDefinition
		manager string
		parents []string
		gen     *apiextv1.CustomResourceDefinition
		allow   bool
		want    string
		code    int // exitError code, 0 for none
	}{{
		name: "not installed",
		gen:  widgetCRD(t, "image"),
		want: "CRD widgets.test.loom.dev is not installed: nothing can break\n",
	}, {
		name: "unchanged", live: widgetCRD(t, "image", "size"), manager: "loom", parents: []string{webWidget},
		gen:  widgetCRD(t, "image", "size"),
		want: "CRD widgets.test.loom.dev: no change breaks a stored parent\n",
	}, {
		name: "installed by someone else", live: widgetCRD(t, "image", "size"), manager: "kubectl",
		gen: widgetCRD(t, "image", "size"),
		want: "note: CRD widgets.test.loom.dev was not installed by Loom: loom run --install-crds leaves it alone unless it is annotated loom.dev/adopt=loom\n" +
			"CRD widgets.test.loom.dev: no change breaks a stored parent\n",
	}, {
		name: "removed field", live: widgetCRD(t, "image", "size"), manager: "loom", parents: []string{webWidget},
		gen: widgetCRD(t, "image"),
		want: "CRD widgets.test.loom.dev: 1 change(s) would break stored parents:\n" +
			"  FieldRemoved: v1 .spec.size: field removed (parents: shop/web)\n" +
			"loom run --install-crds refuses them; set schema.allowBreakingChanges: true in loom.yaml to apply them anyway\n",
		code: 1,
	}, {
		name: "removed field, allowed", live: widgetCRD(t, "image", "size"), manager: "loom", parents: []string{webWidget},
		gen: widgetCRD(t, "image"), allow: true,
		want: "CRD widgets.test.loom.dev: 1 change(s) would break stored parents:\n" +
			"  FieldRemoved: v1 .spec.size: field removed (parents: shop/web)\n" +
			"loom.yaml sets schema.allowBreakingChanges: loom run --install-crds would apply them\n",
		code: 0,
	}, {
		name: "version still stored, allowed", live: withStoredAlpha(widgetCRD(t, "image")), manager: "loom", parents: []string{webWidget},
		gen: widgetCRD(t, "image"), allow: true,
		want: "CRD widgets.test.loom.dev: 1 change(s) would break stored parents:\n" +
			"  VersionStillStored: v1alpha1: version removed while still stored (status.storedVersions lists it) (parents: shop/web)\n" +
			"loom run --install-crds refuses them: " + crd.RetiredAdvice("v1alpha1") + "\n",
		code: 1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &crdCheck{enabled: true, client: fakeCluster(t, tc.live, tc.manager, tc.parents...)}
			var out bytes.Buffer
			cfg := config.Config{Schema: &config.Schema{AllowBreakingChanges: tc.allow}}
			err := c.check(context.Background(), &out, cfg, tc.gen)
			code := 0
			if ee := (*exitError)(nil); errors.As(err, &ee) {
				code = ee.code
			} else if err != nil {
				t.Fatalf("run: %v", err)
			}
			if code != tc.code {
				t.Errorf("exit code %d (%v), want %d", code, err, tc.code)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("without --check", func(t *testing.T) {
		ran, err := (&crdCheck{}).run(context.Background(), &bytes.Buffer{}, &render.Set{})
		if ran || err != nil {
			t.Errorf("run = %v, %v; want false, nil", ran, err)
		}
	})
}
