package placement

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/config"
)

// regs are three registered clusters, and a name two Secrets register.
var regs = []cluster.Registration{
	{Name: "w2", Labels: map[string]string{"env": "prod", "region": "us"}, Secret: types.NamespacedName{Namespace: "loom-system", Name: "w2"}},
	{Name: "w1", Labels: map[string]string{"env": "prod", "region": "eu"}, Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}},
	{Name: "dev", Labels: map[string]string{"env": "dev"}, Secret: types.NamespacedName{Namespace: "loom-system", Name: "dev"}},
	{Name: "twice", Labels: map[string]string{"env": "prod"}, Secret: types.NamespacedName{Namespace: "loom-system", Name: "a"}},
	{Name: "twice", Labels: map[string]string{"env": "prod"}, Secret: types.NamespacedName{Namespace: "loom-system", Name: "b"}},
}

func child(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestCheck(t *testing.T) {
	prod := &config.Clusters{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
	tests := []struct {
		name    string
		rule    *config.Clusters
		child   string
		wantIs  error
		wantErr string
	}{
		{name: "no annotation, no rule", child: "metadata: {name: a}"},
		{name: "no annotation", rule: prod, child: "metadata: {name: a}"},
		{name: "selected", rule: prod, child: "metadata: {name: a, annotations: {loom.dev/cluster: w1}}"},
		{name: "named", rule: &config.Clusters{Names: []string{"dev"}}, child: "metadata: {name: a, annotations: {loom.dev/cluster: dev}}"},
		{name: "registered, not selected", rule: prod, child: "metadata: {name: a, annotations: {loom.dev/cluster: dev}}",
			wantIs: ErrNotAllowed, wantErr: `loom.dev/cluster "dev": this set's loom.yaml clusters: allows only w1, w2`},
		{name: "registered, no rule", child: "metadata: {name: a, annotations: {loom.dev/cluster: w1}}",
			wantIs: ErrNotAllowed, wantErr: "has no clusters:"},
		{name: "named, not registered", rule: &config.Clusters{Names: []string{"w9"}}, child: "metadata: {name: a, annotations: {loom.dev/cluster: w9}}",
			wantIs: ErrNotRegistered, wantErr: `loom.dev/cluster "w9": no Secret in Loom's namespace registers a cluster of that name`},
		{name: "registered twice", rule: prod, child: "metadata: {name: a, annotations: {loom.dev/cluster: twice}}",
			wantIs: ErrNotRegistered, wantErr: "cluster twice is registered by more than one Secret: loom-system/a, loom-system/b"},
		// A parent's spec can choose the cluster: whether a cluster the
		// set may not use is registered is not the tenant's to learn.
		{name: "not registered, not selected", rule: prod, child: "metadata: {name: a, annotations: {loom.dev/cluster: other-team}}",
			wantIs: ErrNotAllowed, wantErr: `loom.dev/cluster "other-team": this set's loom.yaml clusters: allows only w1, w2`},
		{name: "not registered, no rule", child: "metadata: {name: a, annotations: {loom.dev/cluster: other-team}}",
			wantIs: ErrNotAllowed, wantErr: "has no clusters:"},
		{name: "registered twice, not named", rule: &config.Clusters{Names: []string{"w1"}}, child: "metadata: {name: a, annotations: {loom.dev/cluster: twice}}",
			wantIs: ErrNotAllowed, wantErr: `loom.dev/cluster "twice": this set's loom.yaml clusters: allows only w1`},
		{name: "empty", rule: prod, child: "metadata: {name: a, annotations: {loom.dev/cluster: ''}}", wantErr: "annotation loom.dev/cluster is empty"},
		{name: "not a string", rule: prod, child: "metadata: {name: a, annotations: {loom.dev/cluster: 7}}", wantErr: "must be a cluster's name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(regs, tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Check(child(t, tt.child))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Check() = %v, want an error containing %q", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Check() = %v, want errors.Is %v", err, tt.wantIs)
			}
		})
	}
}

// .Clusters holds the allowed clusters only, sorted by name, as names and
// labels; never a kubeconfig, never nil.
func TestTemplate(t *testing.T) {
	tests := []struct {
		name string
		rule *config.Clusters
		want []any
	}{
		{name: "no rule", want: []any{}},
		{name: "names and selector", rule: &config.Clusters{Names: []string{"dev", "w9"}, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}},
			want: []any{
				map[string]any{"Name": "dev", "Labels": map[string]any{"env": "dev"}},
				map[string]any{"Name": "w2", "Labels": map[string]any{"env": "prod", "region": "us"}},
			}},
		{name: "a name registered twice is left out", rule: &config.Clusters{Names: []string{"twice", "w1"}},
			want: []any{map[string]any{"Name": "w1", "Labels": map[string]any{"env": "prod", "region": "eu"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(regs, tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Template()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Template() (-want +got):\n%s", diff)
			}
			// A template that changes its copy does not change the next.
			for _, v := range got {
				v.(map[string]any)["Labels"].(map[string]any)["env"] = "changed"
			}
			if diff := cmp.Diff(tt.want, c.Template()); diff != "" {
				t.Errorf("Template() after a change to an earlier copy (-want +got):\n%s", diff)
			}
		})
	}
}
