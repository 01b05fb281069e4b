package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// selector turns an inline YAML label selector into a metav1.LabelSelector.
func selector(t *testing.T, doc string) *metav1.LabelSelector {
	t.Helper()
	var s metav1.LabelSelector
	if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return &s
}

func TestSelect(t *testing.T) {
	regs := []Registration{
		{Name: "w3", Labels: map[string]string{"env": "dev"}},
		{Name: "w1", Labels: map[string]string{"env": "prod", "region": "eu"}},
		{Name: "w2", Labels: map[string]string{"env": "prod", "region": "us"}},
	}
	tests := []struct {
		name     string
		names    []string
		selector string // YAML; "": nil
		want     []string
		wantErr  string
	}{
		{name: "nothing allowed", want: nil},
		{name: "names", names: []string{"w3", "w1"}, want: []string{"w1", "w3"}},
		{name: "a name not registered", names: []string{"w9", "w2"}, want: []string{"w2"}},
		{name: "match labels", selector: "matchLabels: {env: prod}", want: []string{"w1", "w2"}},
		{name: "match expressions", selector: "matchExpressions: [{key: region, operator: NotIn, values: [us]}]", want: []string{"w1", "w3"}},
		{name: "empty selector matches every cluster", selector: "{}", want: []string{"w1", "w2", "w3"}},
		{name: "names or selector", names: []string{"w3"}, selector: "matchLabels: {region: us}", want: []string{"w2", "w3"}},
		{name: "a cluster both named and selected once", names: []string{"w1"}, selector: "matchLabels: {region: eu}", want: []string{"w1"}},
		{name: "invalid selector", selector: "matchExpressions: [{key: env, operator: Sometimes, values: [prod]}]",
			wantErr: `cluster selector: "Sometimes" is not a valid label selector operator`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sel *metav1.LabelSelector
			if tt.selector != "" {
				sel = selector(t, tt.selector)
			}
			got, err := Select(regs, tt.names, sel)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Select() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Select() error = %v", err)
			}
			var names []string
			for _, reg := range got {
				names = append(names, reg.Name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("Select() names (-want +got):\n%s", diff)
			}
		})
	}
}
