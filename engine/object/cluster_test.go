package object

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestTargetCluster(t *testing.T) {
	tests := []struct {
		name, child, want string
	}{
		{name: "no annotations", child: "metadata: {name: a}", want: ""},
		{name: "other annotations", child: "metadata: {name: a, annotations: {loom.dev/delete-policy: orphan}}", want: ""},
		{name: "a cluster", child: "metadata: {name: a, annotations: {loom.dev/cluster: eu-1}}", want: "eu-1"},
		{name: "a label is not the annotation", child: "metadata: {name: a, labels: {loom.dev/cluster: eu-1}}", want: ""},
		{name: "not a string", child: "metadata: {name: a, annotations: {loom.dev/cluster: 7}}", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(tt.child), &obj); err != nil {
				t.Fatal(err)
			}
			if got := TargetCluster(&unstructured.Unstructured{Object: obj}); got != tt.want {
				t.Errorf("TargetCluster() = %q, want %q", got, tt.want)
			}
		})
	}
}
