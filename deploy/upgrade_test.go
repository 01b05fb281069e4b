package deploy

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestUpgradeNeverRunsTwoWriters: an upgrade of the chart never runs an
// old and a new Loom that both write. Replicas that elect a leader, or
// share one shard group, may roll one by one: the new pods wait for the
// old ones' Leases. Anything else, a Loom without leader election, or an
// upgrade that switches between leader election and sharding (or to
// another Lease or group), which the chart sees by looking the running
// Deployment up, stops every old pod before a new one starts (Recreate).
func TestUpgradeNeverRunsTwoWriters(t *testing.T) {
	ch := loadChart(t, nil)
	leader := []string{"run", "--leader-elect", "--leader-election-namespace=ops", "--leader-election-id=loom"}
	sharded := []string{"run", "--sharded", "--shard-namespace=ops", "--shard-group=loom"}
	tests := []struct {
		name   string
		values string
		// running is the args of the Deployment the upgrade replaces; nil
		// for an install (or helm template, whose lookups find nothing).
		running  []string
		wantArgs []string // among the new args
		want     appsv1.DeploymentStrategyType
	}{
		{"one replica elects a leader too", "replicas: 1", nil, []string{"--leader-elect"}, appsv1.RollingUpdateDeploymentStrategyType},
		{"one replica, upgraded", "replicas: 1", leader, []string{"--leader-elect"}, appsv1.RollingUpdateDeploymentStrategyType},
		{"two replicas, upgraded", "{}", leader, []string{"--leader-elect"}, appsv1.RollingUpdateDeploymentStrategyType},
		{"leader election turned off: recreated", "{replicas: 1, leaderElection: {enabled: false}}", nil, nil, appsv1.RecreateDeploymentStrategyType},
		{"sharded, upgraded", "sharding: {enabled: true}", sharded, []string{"--sharded"}, appsv1.RollingUpdateDeploymentStrategyType},
		{"sharded, installed", "sharding: {enabled: true}", nil, []string{"--sharded"}, appsv1.RollingUpdateDeploymentStrategyType},
		{"from leader election to sharding", "sharding: {enabled: true}", leader, []string{"--sharded"}, appsv1.RecreateDeploymentStrategyType},
		{"from sharding to leader election", "{}", sharded, []string{"--leader-elect"}, appsv1.RecreateDeploymentStrategyType},
		{"to another shard group", "sharding: {enabled: true, group: other}", sharded, []string{"--shard-group=other"}, appsv1.RecreateDeploymentStrategyType},
		{"from a Loom without leader election", "{}", []string{"run"}, []string{"--leader-elect"}, appsv1.RecreateDeploymentStrategyType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.running != nil {
				objs = append(objs, runningDeployment(t, tt.running))
			}
			docs, err := RenderWith(ch, testRelease, readValues(t, tt.values), fakeLookups{dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)})
			if err != nil {
				t.Fatal(err)
			}
			d := decode(t, docs).deployment(t)
			args := d.Spec.Template.Spec.Containers[0].Args
			for _, a := range tt.wantArgs {
				if !slices.Contains(args, a) {
					t.Errorf("args %q, want %s among them", args, a)
				}
			}
			if got := d.Spec.Strategy.Type; got != tt.want {
				t.Errorf("strategy %q, want %q", got, tt.want)
			}
			switch ru := d.Spec.Strategy.RollingUpdate; {
			case d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && ru != nil:
				t.Errorf("a Recreate strategy with rollingUpdate %+v, which the API server refuses", ru)
			case d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && (ru == nil || ru.MaxSurge == nil || ru.MaxUnavailable == nil):
				// Left to the API server's defaults, no server-side apply
				// owns it, and a later switch to Recreate is refused.
				t.Errorf("a RollingUpdate strategy whose rollingUpdate is not set in full: %+v", ru)
			}
		})
	}
}

// runningDeployment is the release's Deployment as the cluster holds it,
// running loom with args.
func runningDeployment(t *testing.T, args []string) *unstructured.Unstructured {
	t.Helper()
	d := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "loom", "namespace": testRelease.Namespace},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "loom", "args": toAny(args)}},
		}}},
	}}
	return d
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// fakeLookups answers the chart's lookups from a fake cluster.
type fakeLookups struct {
	client *dynamicfake.FakeDynamicClient
}

func (f fakeLookups) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	if apiVersion != "apps/v1" || kind != "Deployment" {
		return nil, false, fmt.Errorf("the chart looks up %s %s; the test serves Deployments only", apiVersion, kind)
	}
	return f.client.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}), true, nil
}
