//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/test/env"
)

// poolSet is a template set whose Pool (scale.e2e.loom.dev/v1) declares a
// scale subresource: spec.replicas is the Deployment's replicas, and the
// status template writes the Deployment's running replicas and its pods'
// label selector (from the Deployment's matchLabels, as a string).
var poolSet = map[string]string{
	"loom.yaml": `parent: {apiVersion: scale.e2e.loom.dev/v1, kind: Pool}
status: status.yaml
schema:
  spec:
    image: string | required=true
    replicas: integer | default=1 minimum=0 format=int32
  scale:
    specReplicasPath: .spec.replicas
    statusReplicasPath: .status.replicas
    labelSelectorPath: .status.selector
`,
	"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
spec:
  replicas: {{ .Spec.replicas }}
  selector:
    matchLabels: {app.kubernetes.io/name: pool, app.kubernetes.io/instance: {{ .Name | quote }}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: pool, app.kubernetes.io/instance: {{ .Name | quote }}}
    spec:
      containers:
        - name: app
          image: {{ .Spec.image | quote }}
`,
	"status.yaml": `{{- $d := dig "Deployment" .Name dict .Children }}
replicas: {{ dig "status" "replicas" 0 $d }}
{{- $sel := list }}
{{- range $k, $v := dig "spec" "selector" "matchLabels" dict $d }}
{{- $sel = append $sel (printf "%s=%s" $k $v) }}
{{- end }}
{{- if $sel }}
selector: {{ join "," $sel | quote }}
{{- end }}
`,
}

// A parent whose set declares schema.scale is scaled through /scale:
// `kubectl scale` changes its spec.replicas, the child Deployment follows,
// and the status template's status.replicas and status.selector are
// written (the CRD keeps them). Then an autoscaling/v2
// HorizontalPodAutoscaler targeting the parent, with minReplicas above the
// parent's replicas, scales it up (kube-controller-manager raises a target
// below minReplicas without any metrics API), the Deployment follows, and
// nothing fights: over a quiet period Loom sends no write and neither the
// parent's spec nor the Deployment's changes.
func TestScaleSubresourceWithKubectlAndHPA(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "pool"), poolSet)
	set, err := render.Load(filepath.Join(dir, "pool"))
	if err != nil {
		t.Fatal(err)
	}
	def, err := set.CRD()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gvr := installCRDDef(ctx, t, def)
	l := startLoom(t, dir, ns, loomOptions{resync: 5 * time.Second})
	createObject(t, gvr, ns, `{apiVersion: scale.e2e.loom.dev/v1, kind: Pool, metadata: {name: web}, spec: {image: nginx:1.27, replicas: 1}}`)
	const selector = "app.kubernetes.io/instance=web,app.kubernetes.io/name=pool"
	waitScaled(t, gvr, ns, 1, selector)

	// 1. kubectl scale writes spec.replicas through /scale.
	kubectl(t, "scale", "-n", ns, "pools.scale.e2e.loom.dev/web", "--replicas", "5")
	waitScaled(t, gvr, ns, 5, selector)
	scale, err := e.Dyn.Resource(gvr).Namespace(ns).Get(ctx, "web", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatalf("get pools/web/scale: %v", err)
	}
	if got, _, _ := unstructured.NestedString(scale.Object, "status", "selector"); got != selector {
		t.Errorf("the scale subresource's status.selector = %q, want %q", got, selector)
	}

	// 2. An HPA whose minReplicas is above the parent's replicas raises it.
	createObject(t, hpaGVR, ns, `{apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: web},
spec: {scaleTargetRef: {apiVersion: scale.e2e.loom.dev/v1, kind: Pool, name: web}, minReplicas: 7, maxReplicas: 10,
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]}}`)
	waitScaled(t, gvr, ns, 7, selector)

	// 3. No fight. Once Loom has gone quiet, watch for 40s: the HPA syncs
	// every 15s (kube-controller-manager's default
	// --horizontal-pod-autoscaler-sync-period, which hack/cluster keeps),
	// so it looks at the parent at least twice, and Loom resyncs every 5s.
	// A write to either spec moves its generation, which only grows: the
	// same generation before and after means no spec write in between.
	quiesce(t, 2*time.Second, func() float64 { n, _ := l.writes.snapshot(); return float64(n) })
	l.writes.reset()
	before := generations(t, gvr, ns)
	reconciles := l.counter(t, "loom_reconcile_total", nil)
	consistently(t, 40*time.Second, "no fight between Loom and the HPA", func(context.Context) error {
		if n, log := l.writes.snapshot(); n != 0 {
			return fmt.Errorf("Loom sent %d writes while the HPA held the parent at 7; first ones:\n%s", n, strings.Join(log, "\n"))
		}
		if got := generations(t, gvr, ns); got != before {
			return fmt.Errorf("generations (parent, Deployment) moved from %v to %v: something wrote a spec", before, got)
		}
		return nil
	})
	if n := l.counter(t, "loom_reconcile_total", nil) - reconciles; n < 4 {
		t.Errorf("Loom reconciled %v times in 40s with a 5s resync: the quiet period proves nothing", n)
	}
	waitScaled(t, gvr, ns, 7, selector)
}

// waitScaled waits until Pool web has spec.replicas want, its Deployment
// has the same, and the status template wrote status.replicas want (the
// Deployment's) and status.selector.
func waitScaled(t *testing.T, gvr schema.GroupVersionResource, ns string, want int64, selector string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 90*time.Second, fmt.Sprintf("Pool web, its Deployment and its status at %d replicas", want), func(ctx context.Context) error {
		p, err := e.Get(ctx, gvr, ns, "web")
		if err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedInt64(p.Object, "spec", "replicas"); got != want {
			return fmt.Errorf("the Pool's spec.replicas = %d", got)
		}
		d, err := e.Get(ctx, deployGVR, ns, "web")
		if err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); got != want {
			return fmt.Errorf("the Deployment's spec.replicas = %d", got)
		}
		if got, _, _ := unstructured.NestedInt64(p.Object, "status", "replicas"); got != want {
			return fmt.Errorf("the Pool's status.replicas = %d", got)
		}
		if got, _, _ := unstructured.NestedString(p.Object, "status", "selector"); got != selector {
			return fmt.Errorf("the Pool's status.selector = %q, want %q", got, selector)
		}
		return nil
	})
}

// generations are the metadata.generation of Pool web and of its
// Deployment.
func generations(t *testing.T, gvr schema.GroupVersionResource, ns string) [2]int64 {
	t.Helper()
	e := env.From(t)
	var out [2]int64
	for i, g := range []schema.GroupVersionResource{gvr, deployGVR} {
		obj, err := e.Get(context.Background(), g, ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		out[i] = obj.GetGeneration()
	}
	return out
}
