package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// `loom render` takes the registered clusters from the --lookups file's
// Secrets in --loom-namespace, and each child's cluster shows in its
// loom.dev/cluster annotation, in the YAML stream and with -o.
func TestRenderShowsClusters(t *testing.T) {
	fleet := filepath.Join(repoRoot, "engine", "offline", "testdata", "fleet")
	parent := filepath.Join(fleet, "tests", "fleet.yaml")
	lookups := filepath.Join(fleet, "tests", "fleet.lookups.yaml")
	tests := []struct {
		name string
		args []string
		want []string // the children's clusters, in order ("" is local)
	}{
		{name: "stream", args: []string{"--lookups", lookups}, want: []string{"", "eu-1", "us-1"}},
		{name: "-o yaml", args: []string{"--lookups", lookups, "-o", "yaml"}, want: []string{"", "eu-1", "us-1"}},
		{name: "another namespace is Loom's", args: []string{"--lookups", lookups, "--loom-namespace", "loom"}, want: []string{""}},
		{name: "no lookups, no clusters", want: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := executeSplit(t, "", append([]string{"render", "-t", fleet, "-f", parent}, tt.args...)...)
			if err != nil {
				t.Fatalf("render: %v\n%s", err, stderr)
			}
			var got []string
			if strings.HasPrefix(out, "apiVersion: v1\nitems:") {
				var list unstructured.UnstructuredList
				if err := yaml.Unmarshal([]byte(out), &list.Object); err != nil {
					t.Fatal(err)
				}
				for _, item := range list.Object["items"].([]any) {
					u := unstructured.Unstructured{Object: item.(map[string]any)}
					got = append(got, u.GetAnnotations()["loom.dev/cluster"])
				}
			} else {
				for _, doc := range strings.Split(out, "\n---\n") {
					var u unstructured.Unstructured
					if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
						t.Fatal(err)
					}
					if u.Object != nil {
						got = append(got, u.GetAnnotations()["loom.dev/cluster"])
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("clusters (-want +got):\n%s\n%s", diff, out)
			}
		})
	}
}
