//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/deploy"
	"github.com/loom-operator/loom/test/env"
)

// The chart's upgrades between leader election and sharding, rendered as
// `helm upgrade` renders them (its lookups answered by the cluster) and
// server-side applied in turn, as Helm 4 applies them: each is accepted
// by the API server, and the switches recreate the pods while upgrades
// within one mode roll them. (A Deployment left with the API server's
// default rollingUpdate could not switch to Recreate by a server-side
// apply: the API server refuses the two together.)
func TestChartUpgradesBetweenModes(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	ch, err := deploy.Load(deploy.ChartDir())
	if err != nil {
		t.Fatal(err)
	}
	rel := deploy.Release{Name: "loom", Namespace: ns}
	leader := map[string]any{"replicas": 1}
	sharded := map[string]any{"replicas": 1, "sharding": map[string]any{"enabled": true}}
	for i, step := range []struct {
		values map[string]any
		want   appsv1.DeploymentStrategyType
	}{
		{leader, appsv1.RollingUpdateDeploymentStrategyType}, // install
		{leader, appsv1.RollingUpdateDeploymentStrategyType},
		{sharded, appsv1.RecreateDeploymentStrategyType},
		{sharded, appsv1.RollingUpdateDeploymentStrategyType},
		{leader, appsv1.RecreateDeploymentStrategyType},
	} {
		docs, err := deploy.RenderWith(ch, rel, step.values, clusterLookups{e})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var body []byte
		for _, d := range docs {
			if d.Kind == "Deployment" {
				if body, err = yaml.YAMLToJSON([]byte(d.Content)); err != nil {
					t.Fatal(err)
				}
			}
		}
		force := true
		applied, err := e.Dyn.Resource(deployGVR).Namespace(ns).Patch(context.Background(), "loom", types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: "helm", Force: &force})
		if err != nil {
			t.Fatalf("step %d (%v): the upgrade is refused: %v", i, step.values, err)
		}
		got, _, _ := unstructured.NestedString(applied.Object, "spec", "strategy", "type")
		if got != string(step.want) {
			t.Errorf("step %d (%v): strategy %s, want %s", i, step.values, got, step.want)
		}
	}
}

// clusterLookups answers the chart's lookups of Deployments from the
// cluster, as `helm upgrade` does.
type clusterLookups struct{ e *env.Env }

func (l clusterLookups) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	if apiVersion != "apps/v1" || kind != "Deployment" {
		return nil, false, fmt.Errorf("the chart looks up %s %s; the test answers Deployments only", apiVersion, kind)
	}
	return l.e.Dyn.Resource(deployGVR), true, nil
}
