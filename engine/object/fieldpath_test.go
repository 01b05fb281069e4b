package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Field paths of loom.dev/drift-ignore: dots between names, `\.` a dot in
// a name (an annotation's key), and no list.
func TestParseFieldPath(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"spec.replicas", []string{"spec", "replicas"}},
		{`metadata.annotations.example\.com/owner`, []string{"metadata", "annotations", "example.com/owner"}},
		{"data", []string{"data"}},
		{"", nil},
		{"spec..replicas", nil},
		{".spec", nil},
		{"spec.", nil},
		{" spec", nil},
		{"spec.containers[0].image", nil},
		{"spec. replicas", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFieldPath(tt.in)
			if (err != nil) != (tt.want == nil) {
				t.Fatalf("ParseFieldPath(%q) = %v, %v", tt.in, got, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.want != nil && FormatFieldPath(got) != tt.in {
				t.Errorf("FormatFieldPath = %q, want %q", FormatFieldPath(got), tt.in)
			}
		})
	}
}
