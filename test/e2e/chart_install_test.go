//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/chart/common"

	"github.com/loom-operator/loom/deploy"
	"github.com/loom-operator/loom/test/env"
)

// restrictedLabels make a namespace admit only pods that meet the
// restricted Pod Security Standard, and warn and audit the same.
var restrictedLabels = map[string]string{
	"pod-security.kubernetes.io/enforce": "restricted",
	"pod-security.kubernetes.io/warn":    "restricted",
	"pod-security.kubernetes.io/audit":   "restricted",
}

// The chart's pods are admitted in a namespace that enforces the
// restricted Pod Security Standard, and its Deployment becomes Available
// (kwok plays the kubelet, so the image is not pulled). A pod the
// admission refuses shows as the Deployment's ReplicaFailure condition
// (the ReplicaSet's FailedCreate), whose message the test reports. Its
// cluster-scoped objects are named after a release of its own.
func TestChartPodsAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ctx := context.Background()
	ns := e.NewNamespace(t)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": restrictedLabels}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	createTemplatesConfigMap(t, ns, "loom-templates-myresource")
	rel := deploy.Release{Name: "loom-pss-e2e", Namespace: ns}
	docs := renderChart(t, rel, "", map[string]any{"replicas": 2, "networkPolicy": map[string]any{"enabled": true}}, nil)
	cleanupClusterObjects(t, "loom-pss-e2e")
	out := kubectlOutput(t, "apply", "--server-side", "--field-manager", "e2e", "-f", writeDocs(t, docs))
	if strings.Contains(out, "PodSecurity") {
		t.Errorf("kubectl apply warned about Pod Security:\n%s", out)
	}

	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := e.Kube.AppsV1().Deployments(ns).Get(ctx, "loom-pss-e2e", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
				return false, fmt.Errorf("pods refused (%s): %s", c.Reason, c.Message)
			}
		}
		return available(d), nil
	})
	if err != nil {
		t.Fatalf("the chart's Deployment in a restricted namespace: %v; %s", err, replicaSetFailures(ctx, e, ns))
	}
	// No token was automounted: the ServiceAccount admission plugin adds a
	// kube-api-access-<random> volume to pods that automount one.
	pods, err := e.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=loom-pss-e2e"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("pods: %v, %v", err, pods)
	}
	for _, p := range pods.Items {
		for _, v := range p.Spec.Volumes {
			if strings.HasPrefix(v.Name, "kube-api-access-") {
				t.Errorf("pod %s has an automounted token volume %s", p.Name, v.Name)
			}
		}
	}
}

// Every object the chart renders with every option on passes the API
// server's validation: a server-side apply, dry run, with strict field
// validation (an unknown or duplicate field fails). The Prometheus
// Operator's kinds, which this cluster does not serve, are checked
// offline instead (deploy's TestMonitoringObjectsMatchTheirSchema).
func TestChartObjectsPassServerValidation(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ctx := context.Background()
	ns := e.NewNamespace(t)
	allOn := filepath.Join(deploy.ChartDir(), "ci", "all-on-values.yaml")
	docs := renderChart(t, deploy.Release{Name: "loom-dryrun-e2e", Namespace: ns}, allOn, map[string]any{"watchNamespace": ns},
		map[string]string{"files/dashboards/loom.json": `{"title": "Loom"}`})
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.Kube.Discovery()))
	checked := map[string]int{}
	for _, d := range docs {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d.Content), &obj.Object); err != nil {
			t.Fatal(err)
		}
		gvk := obj.GroupVersionKind()
		if gvk.Group == "monitoring.coreos.com" {
			continue
		}
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", d.Kind, d.Name, err)
		}
		r := e.Dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
		body, err := obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		force := true
		_, err = r.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
			FieldManager: "e2e", Force: &force, DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
		if err != nil {
			t.Errorf("%s %s (%s): %v", d.Kind, d.Name, d.Source, err)
		}
		checked[d.Kind]++
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"Service", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "ConfigMap"} {
		if checked[kind] == 0 {
			t.Errorf("no %s checked (checked: %v)", kind, checked)
		}
	}
}

// renderChart renders deploy/chart for rel with the values of valuesFile
// (if any), then over (top-level keys replaced); files are added to the
// chart (the dashboard and alerts another branch ships).
func renderChart(t *testing.T, rel deploy.Release, valuesFile string, over map[string]any, files map[string]string) []deploy.Doc {
	t.Helper()
	ch, err := deploy.Load(deploy.ChartDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		ch.Files = append(ch.Files, &common.File{Name: name, Data: []byte(text)})
	}
	values := map[string]any{}
	if valuesFile != "" {
		b, err := os.ReadFile(valuesFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &values); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range over {
		values[k] = v
	}
	docs, err := deploy.Render(ch, rel, values)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// writeDocs writes docs into one file for kubectl apply -f.
func writeDocs(t *testing.T, docs []deploy.Doc) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "chart.yaml")
	if err := os.WriteFile(file, deploy.Manifest("", docs), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// cleanupClusterObjects deletes, after the test, the ClusterRole and
// ClusterRoleBinding of a release's fullname (its namespaced objects go
// with its namespace).
func cleanupClusterObjects(t *testing.T, name string) {
	e := env.From(t)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = e.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = e.Kube.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// available reports whether every replica of d is available.
func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return d.Spec.Replicas != nil && d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.ObservedGeneration == d.Generation
		}
	}
	return false
}

// replicaSetFailures names the FailedCreate Events of ns's ReplicaSets:
// what the admission said of the pods it refused.
func replicaSetFailures(ctx context.Context, e *env.Env, ns string) string {
	evs, err := e.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
	if err != nil {
		return fmt.Sprintf("list Events: %v", err)
	}
	var msgs []string
	for _, e := range evs.Items {
		msgs = append(msgs, fmt.Sprintf("%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message))
	}
	if len(msgs) == 0 {
		return "no FailedCreate Event"
	}
	return strings.Join(msgs, "\n")
}

// createTemplatesConfigMap makes the ConfigMap name in ns from
// templates/myresource, as `kubectl create configmap --from-file` does.
func createTemplatesConfigMap(t *testing.T, ns, name string) {
	t.Helper()
	e := env.From(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{}}
	set := filepath.Join(e.Root, "templates", "myresource")
	entries, err := os.ReadDir(set)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(set, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[e.Name()] = string(b)
	}
	if _, err := e.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// kubectlOutput runs kubectl against the local cluster, fails the test if
// it fails, and returns what it printed (warnings included).
func kubectlOutput(t *testing.T, args ...string) string {
	t.Helper()
	e := env.From(t)
	args = append([]string{"--kubeconfig", e.Kubeconfig}, args...)
	out, err := exec.Command("kubectl", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}
