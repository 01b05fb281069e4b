package config

import (
	"strings"
	"testing"
)

func TestManagementIsValidated(t *testing.T) {
	base := "parent: {apiVersion: example.loom.dev/v1, kind: Web}\n"
	for _, tc := range []struct {
		name, yaml, err string
	}{
		{"no management", "", ""},
		{"every mode", "manage: create-only\ndrift: {mode: warn, ignore: [{kind: Deployment, paths: [spec.replicas]}]}\n", ""},
		{"a typo of a mode", "manage: creat-only\n", `manage is "creat-only"; it must be one of full, create-only, observe, patch (did you mean "create-only"?)`},
		{"an unknown drift mode", "drift: {mode: warning}\n", `drift.mode is "warning"; it must be one of repair, warn (did you mean "warn"?)`},
		{"an ignore without kind", "drift: {ignore: [{paths: [spec.replicas]}]}\n", "drift.ignore[0].kind is required"},
		{"an ignore without paths", "drift: {ignore: [{kind: Deployment}]}\n", "drift.ignore[0].paths: name at least one field path"},
		{"a path that is not one", "drift: {ignore: [{kind: Deployment, paths: [spec.]}]}\n", `drift.ignore[0].paths[0]: "spec." is not a field path`},
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
