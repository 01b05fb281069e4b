package yamldoc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSplitDocuments checks where output is split into YAML documents.
func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one", "a: 1\n", []string{"a: 1\n"}},
		{"two", "a: 1\n---\nb: 2\n", []string{"a: 1\n", "b: 2\n"}},
		{"leading separator", "---\na: 1\n", []string{"", "a: 1\n"}},
		{"trailing separator", "a: 1\n---\n", []string{"a: 1\n", ""}},
		{"no final newline", "a: 1\n---", []string{"a: 1\n", ""}},
		{"comment after separator", "a: 1\n--- # x\nb: 2\n", []string{"a: 1\n", "b: 2\n"}},
		{"CRLF", "a: 1\r\n---\r\nb: 2\r\n", []string{"a: 1\r\n", "b: 2\r\n"}},
		{"four dashes", "a: 1\n----\nb: 2\n", []string{"a: 1\n----\nb: 2\n"}},
		{"content on the separator line", "a: 1\n--- {b: 2}\n", []string{"a: 1\n", "{b: 2}\n"}},
		{"block content on the separator line", "a: 1\n---   b: 2\nc: 3\n", []string{"a: 1\n", "b: 2\nc: 3\n"}},
		{"dashes then text", "a: 1\n---x\n", []string{"a: 1\n---x\n"}},
		{"indented", "a: |\n  ---\nb: 2\n", []string{"a: |\n  ---\nb: 2\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range Split([]byte(tt.in)) {
				got = append(got, string(d.Text))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Split mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
