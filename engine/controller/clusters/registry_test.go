package clusters

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
)

func reg(name, secret, kubeconfig string, labels map[string]string) cluster.Registration {
	return cluster.Registration{Name: name, Kubeconfig: []byte(kubeconfig), Labels: labels, Source: cluster.SourceLoom,
		Secret: types.NamespacedName{Namespace: "loom-system", Name: secret}}
}

// Diff says which clusters' registrations changed, and nothing else: a
// Secret read again unchanged must not re-reconcile every parent.
func TestDiff(t *testing.T) {
	w1 := reg("w1", "w1", "a", map[string]string{"env": "prod"})
	tests := []struct {
		name       string
		prev, next map[string][]cluster.Registration
		want       []string // names, one per registration returned
	}{
		{name: "unchanged", prev: map[string][]cluster.Registration{"w1": {w1}}, next: map[string][]cluster.Registration{"w1": {w1}}},
		{name: "added", next: map[string][]cluster.Registration{"w1": {w1}}, want: []string{"w1"}},
		{name: "removed", prev: map[string][]cluster.Registration{"w1": {w1}}, want: []string{"w1"}},
		{name: "new kubeconfig", prev: map[string][]cluster.Registration{"w1": {w1}},
			next: map[string][]cluster.Registration{"w1": {reg("w1", "w1", "b", w1.Labels)}}, want: []string{"w1", "w1"}},
		{name: "new labels", prev: map[string][]cluster.Registration{"w1": {w1}},
			next: map[string][]cluster.Registration{"w1": {reg("w1", "w1", "a", map[string]string{"env": "dev"})}}, want: []string{"w1", "w1"}},
		{name: "claimed twice", prev: map[string][]cluster.Registration{"w1": {w1}},
			next: map[string][]cluster.Registration{"w1": {w1, reg("w1", "other", "a", nil)}}, want: []string{"w1", "w1", "w1"}},
		{name: "same two Secrets read in another order",
			prev: map[string][]cluster.Registration{"w1": {w1, reg("w1", "other", "a", nil)}},
			next: map[string][]cluster.Registration{"w1": {reg("w1", "other", "a", nil), w1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range Diff(tt.prev, tt.next) {
				got = append(got, r.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Diff (-want +got):\n%s", diff)
			}
		})
	}
}

// Affects re-reconciles a set's parents only when a changed registration
// is one the set may use, by name or by label.
func TestAffects(t *testing.T) {
	prod := []cluster.Registration{reg("w1", "w1", "a", map[string]string{"env": "prod"})}
	tests := []struct {
		name string
		rule *config.Clusters
		regs []cluster.Registration
		want bool
	}{
		{name: "a set without clusters", regs: prod},
		{name: "named", rule: &config.Clusters{Names: []string{"w1"}}, regs: prod, want: true},
		{name: "another name", rule: &config.Clusters{Names: []string{"w2"}}, regs: prod},
		{name: "selected", rule: &config.Clusters{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, regs: prod, want: true},
		{name: "not selected", rule: &config.Clusters{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}, regs: prod},
		{name: "nothing changed", rule: &config.Clusters{Names: []string{"w1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Change(tt.regs).Affects(tt.rule); got != tt.want {
				t.Errorf("Affects() = %v, want %v", got, tt.want)
			}
		})
	}
}

// Targeted lists the cluster Loom runs in first, then each workload
// cluster once, whether a child renders there or the status lists one
// there from before (it may have to be pruned).
func TestTargeted(t *testing.T) {
	child := func(cl string) *unstructured.Unstructured {
		c := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web"}}}
		if cl != "" {
			c.SetAnnotations(map[string]string{object.AnnotationCluster: cl})
		}
		return c
	}
	got := Targeted([]*unstructured.Unstructured{child("w2"), child(""), child("w1"), child("w2")}, []string{"w3", "w1"})
	if diff := cmp.Diff([]string{"", "w1", "w2", "w3"}, got); diff != "" {
		t.Errorf("Targeted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{""}, Targeted(nil, nil)); diff != "" {
		t.Errorf("Targeted(none) (-want +got):\n%s", diff)
	}
}
