package crdinstall

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

func u(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(j, &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestCRDServingChanged(t *testing.T) {
	crd := func(gen int, established string) *unstructured.Unstructured {
		return u(t, fmt.Sprintf(`
metadata: {name: widgets.example.com, generation: %d}
status: {conditions: [{type: NamesAccepted, status: "True"}, {type: Established, status: %q}], acceptedNames: {kind: Widget}}
`, gen, established))
	}
	tests := []struct {
		name     string
		old, cur *unstructured.Unstructured
		want     bool
	}{
		{"became established", crd(1, "False"), crd(1, "True"), true},
		{"spec changed", crd(1, "True"), crd(2, "True"), true},
		{"status churn only", crd(1, "True"), crd(1, "True"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ServingChanged(tt.old, tt.cur); got != tt.want {
				t.Errorf("ServingChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSlimCRDKeepsWhatLoomReads(t *testing.T) {
	crd := u(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com, uid: u1, resourceVersion: "9", generation: 2, managedFields: [{manager: x}], annotations: {big: "yes"}}
spec: {group: example.com, versions: [{name: v1, schema: {openAPIV3Schema: {type: object}}}]}
status: {conditions: [{type: Established, status: "True"}], acceptedNames: {kind: Widget}}
`)
	got, err := Slim(crd)
	if err != nil {
		t.Fatal(err)
	}
	want := u(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com, uid: u1, resourceVersion: "9", generation: 2}
status: {conditions: [{type: Established, status: "True"}]}
`)
	if diff := cmp.Diff(want.Object, got.(*unstructured.Unstructured).Object); diff != "" {
		t.Errorf("Slim (-want +got):\n%s", diff)
	}
	if !Established(got.(*unstructured.Unstructured)) || ServingChanged(got, got) {
		t.Error("the slim CRD no longer answers what Loom asks of it")
	}
}
