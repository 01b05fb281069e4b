package crd

import (
	"fmt"
	"sort"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// loomStatus is the schema of the status fields Loom writes on every
// parent (engine/status: Compute, childList, conditionMap): the CRD must
// accept each of them as Loom writes it.
func loomStatus() map[string]apiextv1.JSONSchemaProps {
	str := func(desc string) apiextv1.JSONSchemaProps {
		return apiextv1.JSONSchemaProps{Type: "string", Description: desc}
	}
	maxLen := func(n int64) *int64 { return &n }
	zero := 0.0
	return map[string]apiextv1.JSONSchemaProps{
		"observedGeneration": {Type: "integer", Format: "int64", Description: "The generation of the spec that this status describes."},
		"state": {
			Type: "string", Description: "A one-word summary for humans and printer columns.",
			Enum: []apiextv1.JSON{{Raw: []byte(`"Building"`)}, {Raw: []byte(`"Ready"`)}, {Raw: []byte(`"Failed"`)}, {Raw: []byte(`"Deleting"`)}, {Raw: []byte(`"Suspended"`)}},
		},
		"templateRevision": str("The template revision the children were rendered from (a set with a rollout policy)."),
		"children": {
			Type: "array", Description: "One entry per child object.",
			Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &apiextv1.JSONSchemaProps{
				Type: "object", Required: []string{"kind", "name", "ready"},
				Properties: map[string]apiextv1.JSONSchemaProps{
					"apiVersion": {Type: "string"}, "kind": {Type: "string"}, "name": {Type: "string"},
					"cluster": {Type: "string", Description: "The registered workload cluster the child is in (loom.dev/cluster); absent for the cluster Loom runs in."},
					"manage": {Type: "string", Description: "How much of the child Loom manages (loom.dev/manage): create-only, observe or patch; absent for full.",
						Enum: []apiextv1.JSON{{Raw: []byte(`"full"`)}, {Raw: []byte(`"create-only"`)}, {Raw: []byte(`"observe"`)}, {Raw: []byte(`"patch"`)}}},
					"ready": {Type: "boolean"}, "status": {Type: "string"}, "message": {Type: "string"},
				},
			}},
		},
		"conditions": {
			Type: "array", Description: "Ready, Progressing and Degraded.",
			XListType: ptr("map"), XListMapKeys: []string{"type"},
			Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &apiextv1.JSONSchemaProps{
				Type: "object", Required: []string{"type", "status", "lastTransitionTime", "reason", "message"},
				Properties: map[string]apiextv1.JSONSchemaProps{
					"type": {Type: "string", MaxLength: maxLen(316)},
					"status": {Type: "string", Enum: []apiextv1.JSON{
						{Raw: []byte(`"True"`)}, {Raw: []byte(`"False"`)}, {Raw: []byte(`"Unknown"`)},
					}},
					"observedGeneration": {Type: "integer", Format: "int64", Minimum: &zero},
					"lastTransitionTime": {Type: "string", Format: "date-time"},
					"reason":             {Type: "string", MaxLength: maxLen(1024)},
					"message":            {Type: "string", MaxLength: maxLen(32768)},
				},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// loomStatusNames are the status fields Loom owns, sorted.
func loomStatusNames() []string {
	var names []string
	for n := range loomStatus() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// withLoomStatus is st (the status object's schema) with Loom's fields
// added; a field of the same name is replaced by Loom's.
func withLoomStatus(st apiextv1.JSONSchemaProps) apiextv1.JSONSchemaProps {
	if st.Type == "" {
		st.Type = "object"
	}
	if st.Properties == nil {
		st.Properties = map[string]apiextv1.JSONSchemaProps{}
	}
	for n, p := range loomStatus() {
		st.Properties[n] = p
	}
	return st
}

// checkLoomStatus refuses a status schema (of the OpenAPI form) that is
// not an object or gives one of Loom's fields another type.
func checkLoomStatus(path string, st apiextv1.JSONSchemaProps) error {
	if st.Type != "" && st.Type != "object" {
		return fmt.Errorf("%s.type: the status is an object, not %q", path, st.Type)
	}
	for _, n := range loomStatusNames() {
		got, ok := st.Properties[n]
		if !ok {
			continue
		}
		if want := loomStatus()[n].Type; got.Type != want {
			return fmt.Errorf("%s.properties.%s: Loom writes this field as %s, not %q", path, n, want, got.Type)
		}
	}
	for _, r := range st.Required {
		switch r {
		case "observedGeneration", "conditions", "state", "children": // Loom writes these every time
		case "templateRevision":
			return fmt.Errorf("%s.required: templateRevision cannot be required: Loom writes it only for a set with a rollout policy", path)
		default:
			return fmt.Errorf("%s.required: %s cannot be required: Loom writes the status without the status template's fields when the template fails", path, r)
		}
	}
	return nil
}
