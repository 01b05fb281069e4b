package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// loom.yaml's clusters: decoded strictly, names and selector validated,
// a bad selector refused with the field's path.
func TestParseClusters(t *testing.T) {
	const parent = "parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource}\n"
	tests := []struct {
		name, src string
		want      *Clusters
		err       string
	}{
		{name: "none", src: parent},
		{name: "names", src: parent + "clusters: {names: [eu-1, us-1]}\n",
			want: &Clusters{Names: []string{"eu-1", "us-1"}}},
		{name: "selector", src: parent + "clusters:\n  selector:\n    matchLabels: {env: prod}\n    matchExpressions: [{key: region, operator: In, values: [eu, us]}]\n",
			want: &Clusters{Selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"env": "prod"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu", "us"}}},
			}}},
		{name: "names and an empty selector", src: parent + "clusters: {names: [eu-1], selector: {}}\n",
			want: &Clusters{Names: []string{"eu-1"}, Selector: &metav1.LabelSelector{}}},
		{name: "empty", src: parent + "clusters: {}\n", err: "clusters: needs names, a selector, or both"},
		{name: "bad name", src: parent + "clusters: {names: [EU_1]}\n", err: `clusters.names[0] "EU_1"`},
		{name: "name twice", src: parent + "clusters: {names: [a, a]}\n", err: `clusters.names[1]: "a" is named twice`},
		{name: "bad selector operator", src: parent + "clusters: {selector: {matchExpressions: [{key: env, operator: Near, values: [x]}]}}\n",
			err: `clusters.selector: "Near" is not a valid label selector operator`},
		{name: "bad selector value", src: parent + "clusters: {selector: {matchLabels: {env: not a value}}}\n",
			err: "clusters.selector: "},
		{name: "In without values", src: parent + "clusters: {selector: {matchExpressions: [{key: env, operator: In}]}}\n",
			err: "clusters.selector: "},
		{name: "unknown field", src: parent + "clusters: {name: [a]}\n", err: `clusters.name: unknown field "name" (did you mean names?)`},
		{name: "unknown selector field", src: parent + "clusters: {selector: {matchLabel: {a: b}}}\n", err: `clusters.selector.matchLabel: unknown field "matchLabel" (did you mean matchLabels?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.src))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse() = %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() = %v, want nil", err)
			}
			if diff := cmp.Diff(tt.want, c.Clusters); diff != "" {
				t.Errorf("Clusters (-want +got):\n%s", diff)
			}
		})
	}
}
