package config

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A key loom.yaml's schema does not have is reported with its path, its
// line and the nearest known key, as the compact schema's markers are.
func TestParseUnknownField(t *testing.T) {
	const parent = "parent:\n  apiVersion: example.loom.dev/v1\n  kind: App\n"
	tests := []struct {
		name, src string
		want      UnknownFieldError
		text      string
	}{
		{name: "in parent", src: parent + "  shortname: [app]\n",
			want: UnknownFieldError{Path: "parent.shortname", Line: 4, Field: "shortname", Suggestion: "shortNames"},
			text: `parent.shortname: unknown field "shortname" (did you mean shortNames?)`},
		{name: "at the top", src: parent + "lookup:\n- {apiVersion: v1, kind: Secret}\n",
			want: UnknownFieldError{Path: "lookup", Line: 4, Field: "lookup", Suggestion: "lookups"},
			text: `lookup: unknown field "lookup" (did you mean lookups?)`},
		{name: "in a list", src: parent + "readiness:\n- kind: Job\n- kind: Job\n  conditon: Complete\n",
			want: UnknownFieldError{Path: "readiness[1].conditon", Line: 7, Field: "conditon", Suggestion: "condition"},
			text: `readiness[1].conditon: unknown field "conditon" (did you mean condition?)`},
		{name: "in the OpenAPI schema", src: parent + "schema:\n  openAPIV3Schema:\n    type: object\n    properties:\n      spec:\n        type: object\n        properties:\n          size: {type: integer, minimun: 1}\n",
			want: UnknownFieldError{Path: "schema.openAPIV3Schema.properties.spec.properties.size.minimun", Line: 11, Field: "minimun", Suggestion: "minimum"},
			text: `schema.openAPIV3Schema.properties.spec.properties.size.minimun: unknown field "minimun" (did you mean minimum?)`},
		{name: "nothing near", src: parent + "zzzzzzzz: 1\n",
			want: UnknownFieldError{Path: "zzzzzzzz", Line: 4, Field: "zzzzzzzz"},
			text: `zzzzzzzz: unknown field "zzzzzzzz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			var got *UnknownFieldError
			if !errors.As(err, &got) {
				t.Fatalf("Parse() = %v, want an *UnknownFieldError", err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if err.Error() != tt.text {
				t.Errorf("Error() = %q, want %q", err.Error(), tt.text)
			}
		})
	}
}
