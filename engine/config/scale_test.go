package config

import (
	"strings"
	"testing"
)

func TestScaleIsValidated(t *testing.T) {
	const base = "parent: {apiVersion: example.loom.dev/v1, kind: Web}\n"
	const status = "status: status.yaml\n"
	for _, tc := range []struct {
		name, yaml, err string
	}{
		{"no scale", "schema: {spec: {replicas: integer}}\n", ""},
		{"every path", status + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}}\n", ""},
		{"no selector", status + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}}\n", ""},
		{"a nested spec field", status + "schema: {spec: {workers: {replicas: integer}}, scale: {specReplicasPath: .spec.workers.replicas, statusReplicasPath: .status.replicas}}\n", ""},
		{"a typo of a key", status + "schema: {spec: {replicas: integer}, scale: {specReplicaPath: .spec.replicas}}\n",
			"schema.scale.specReplicaPath: unknown field \"specReplicaPath\" (did you mean specReplicasPath?)"},
		{"no spec path", status + "schema: {spec: {replicas: integer}, scale: {statusReplicasPath: .status.replicas}}\n",
			"schema.scale.specReplicasPath is required"},
		{"no status path", status + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas}}\n",
			"schema.scale.statusReplicasPath is required"},
		{"a spec path outside the spec", status + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .status.replicas, statusReplicasPath: .status.replicas}}\n",
			`schema.scale.specReplicasPath: ".status.replicas" must be a field of the spec, as .spec.replicas`},
		{"a spec path with a list", status + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: '.spec.pools[0].replicas', statusReplicasPath: .status.replicas}}\n",
			`schema.scale.specReplicasPath: ".spec.pools[0].replicas" must be a field of the spec, as .spec.replicas`},
		{"a status path nested", status + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.scale.replicas}}\n",
			`schema.scale.statusReplicasPath: ".status.scale.replicas" must be a field directly under the status, as .status.replicas`},
		{"a selector in the spec", status + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .spec.selector}}\n",
			`schema.scale.labelSelectorPath: ".spec.selector" must be a field directly under the status, as .status.selector`},
		{"one status field for both", status + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.replicas}}\n",
			"schema.scale.labelSelectorPath: .status.replicas is statusReplicasPath already"},
		{"no status template", "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}}\n",
			"schema.scale: a set with a scale subresource needs a status template (status:) that writes .status.replicas and .status.selector"},
		{"scale on a version", status + "schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}}\n" +
			"versions: [{name: v2, schema: {spec: {replicas: integer}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}}}]\n",
			"versions[0].schema.scale: declare it once, on the hub's schema: every version gets the same scale subresource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(base + tc.yaml))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Parse error %v, want one containing %q", err, tc.err)
			}
		})
	}
}
