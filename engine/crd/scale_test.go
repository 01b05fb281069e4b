package crd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kptr "k8s.io/utils/ptr"
)

// A set declaring schema.scale gets the scale subresource on every version
// it serves, as loom.yaml says it, and each version's status schema holds
// the replicas (an integer) and the selector (a string), so that the API
// server keeps what the status template writes.
func TestGenerateScale(t *testing.T) {
	def, err := Generate(testSets(t)["scale"])
	if err != nil {
		t.Fatalf("Generate() = %v", err)
	}
	want := &apiextv1.CustomResourceSubresources{
		Status: &apiextv1.CustomResourceSubresourceStatus{},
		Scale: &apiextv1.CustomResourceSubresourceScale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: kptr.To(".status.selector"),
		},
	}
	if len(def.Spec.Versions) != 2 {
		t.Fatalf("versions = %d, want 2", len(def.Spec.Versions))
	}
	for _, v := range def.Spec.Versions {
		if diff := cmp.Diff(want, v.Subresources); diff != "" {
			t.Errorf("version %s: subresources (-want +got):\n%s", v.Name, diff)
		}
		st := v.Schema.OpenAPIV3Schema.Properties["status"].Properties
		if got := st["replicas"].Type; got != "integer" {
			t.Errorf("version %s: status.replicas is %q, want integer", v.Name, got)
		}
		if got := st["selector"].Type; got != "string" {
			t.Errorf("version %s: status.selector is %q, want string", v.Name, got)
		}
	}
	// Without scale, no version has the subresource.
	def, err = Generate(testSets(t)["versions"])
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range def.Spec.Versions {
		if v.Subresources.Scale != nil {
			t.Errorf("version %s has a scale subresource the set does not declare", v.Name)
		}
	}
}

func TestGenerateScaleErrors(t *testing.T) {
	const head = "parent: {apiVersion: gen.test.loom.dev/v1, kind: App}\nstatus: status.yaml\n"
	const scale = "scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}"
	tests := []struct{ name, src, want string }{
		{"spec field missing", head + "schema: {spec: {size: integer}, " + scale + "}",
			`schema.scale.specReplicasPath: .spec.replicas is not in the spec's schema`},
		{"spec field a string", head + "schema: {spec: {replicas: string}, " + scale + "}",
			`schema.scale.specReplicasPath: .spec.replicas is a string in the schema; the replicas are an integer`},
		{"spec field through a scalar", head + "schema: {spec: {pool: string}, scale: {specReplicasPath: .spec.pool.replicas, statusReplicasPath: .status.replicas}}",
			`schema.scale.specReplicasPath: .spec.pool.replicas is not in the spec's schema (.spec.pool is a string)`},
		{"free-form spec", head + "schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}, " + scale + "}",
			`schema.scale.specReplicasPath: .spec.replicas is not in the spec's schema`},
		{"spec field missing in a version", head + "schema: {spec: {replicas: integer}, " + scale + "}\nversions: [{name: v2, schema: {spec: {size: integer}}}]",
			`version v2: schema.scale.specReplicasPath: .spec.replicas is not in the spec's schema`},
		{"status field of Loom's", head + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.observedGeneration}}",
			`schema.scale.statusReplicasPath: .status.observedGeneration is a status field Loom writes itself`},
		{"selector field of Loom's", head + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.state}}",
			`schema.scale.labelSelectorPath: .status.state is a status field Loom writes itself`},
		{"status replicas declared a string", head + "schema: {spec: {replicas: integer}, status: {replicas: string}, " + scale + "}",
			`schema.scale.statusReplicasPath: .status.replicas is a string in the status schema; the replicas are an integer`},
		{"selector declared an object", head + "schema: {spec: {replicas: integer}, status: {selector: {app: string}}, " + scale + "}",
			`schema.scale.labelSelectorPath: .status.selector is an object in the status schema; the selector is a string`},
		{"chart's release", "parent: {apiVersion: gen.test.loom.dev/v1, kind: App}\nstatus: status.yaml\nchart: chart\nschema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.release}}",
			`schema.scale.statusReplicasPath: .status.release is a status field Loom writes itself`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Generate(parse(t, tt.src))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Generate() = %v, want an error starting %q", err, tt.want)
			}
		})
	}
}

// Adding a scale subresource breaks nothing; removing it (or moving it off
// a version still served) is a ScaleRemoved break naming the stored
// parents, since kubectl scale and HorizontalPodAutoscalers that target
// them stop working; with no parent stored, nothing breaks.
func TestBreakingScale(t *testing.T) {
	withScale := func(c *apiextv1.CustomResourceDefinition) *apiextv1.CustomResourceDefinition {
		c = c.DeepCopy()
		for i := range c.Spec.Versions {
			c.Spec.Versions[i].Subresources = &apiextv1.CustomResourceSubresources{
				Status: &apiextv1.CustomResourceSubresourceStatus{},
				Scale:  &apiextv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
			}
		}
		return c
	}
	plain := testCRD(t, "Namespaced", "v1", baseSpec)
	scaled := withScale(plain)
	stored := []map[string]any{parent(t, "web", "{replicas: 2}"), parent(t, "api", "{}")}
	if got := Breaking(plain, scaled, stored, nil); len(got) != 0 {
		t.Errorf("adding scale: breaks %v, want none", got)
	}
	if got := Breaking(scaled, plain, nil, nil); len(got) != 0 {
		t.Errorf("removing scale with nothing stored: breaks %v, want none", got)
	}
	got := Breaking(scaled, plain, stored, nil)
	want := []Break{{Kind: ScaleRemoved, Version: "v1", Detail: "scale subresource removed: kubectl scale and HorizontalPodAutoscalers that target these parents stop working", Parents: []string{"shop/api", "shop/web"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("removing scale (-want +got):\n%s", diff)
	}
	if !got[0].Overridable() {
		t.Errorf("ScaleRemoved is not overridable; schema.allowBreakingChanges should let it through")
	}
}
