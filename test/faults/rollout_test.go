//go:build e2e

package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// history records, from a watch, each ConfigMap's data.version as it
// changes, and each step the TemplateSet shows.
type history struct {
	mu       sync.Mutex
	versions map[string][]string
	steps    []int64
}

func (h *history) configMap(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	v, _, _ := unstructured.NestedString(u.Object, "data", "version")
	h.mu.Lock()
	defer h.mu.Unlock()
	seq := h.versions[u.GetName()]
	if len(seq) == 0 || seq[len(seq)-1] != v {
		h.versions[u.GetName()] = append(seq, v)
	}
}

func (h *history) templateSet(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	step, _, _ := unstructured.NestedInt64(u.Object, "status", "step")
	h.mu.Lock()
	defer h.mu.Unlock()
	if step != 0 && (len(h.steps) == 0 || h.steps[len(h.steps)-1] != step) {
		h.steps = append(h.steps, step)
	}
}

func (h *history) step() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.steps) == 0 {
		return 0
	}
	return h.steps[len(h.steps)-1]
}

// Loom killed with SIGKILL just as a rollout's second step starts resumes
// the rollout after a restart: the steps it shows never go back, every
// parent's children move from the old revision to the new exactly once,
// and the rollout completes.
func TestRolloutSurvivesSIGKILL(t *testing.T) {
	e := env.From(t)
	const n = 20
	ns := e.NewNamespace(t)
	root := t.TempDir()
	dir := filepath.Join(root, "app")
	files := map[string]string{
		"loom.yaml": "parent:\n  apiVersion: example.loom.dev/v1alpha1\n  kind: MyResource\n" +
			"rollout:\n  steps: [1, 50%, 100%]\n  readyTimeout: 60s\n  soak: 4s\n",
		"_version.tpl":   `{{ define "version" }}v1{{ end }}`,
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\ndata:\n  version: {{ include \"version\" . | quote }}\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	name := "app." + ns
	h := &history{versions: map[string][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cms := dynamicinformer.NewFilteredDynamicInformer(e.Dyn, configMapGVR, ns, 0, cache.Indexers{}, nil).Informer()
	_, _ = cms.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: h.configMap, UpdateFunc: func(_, o any) { h.configMap(o) }})
	tss := dynamicinformer.NewFilteredDynamicInformer(e.Dyn, v1alpha1.TemplateSetGVR, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }).Informer()
	_, _ = tss.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: h.templateSet, UpdateFunc: func(_, o any) { h.templateSet(o) }})
	go cms.Run(ctx.Done())
	go tss.Run(ctx.Done())

	l := startLoom(t, root, ns)
	for i := range n {
		p := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.loom.dev/v1alpha1", "kind": "MyResource",
			"metadata": map[string]any{"name": fmt.Sprintf("p-%d", i)},
			"spec":     map[string]any{"image": "nginx:1.27"},
		}}
		if _, err := e.Dyn.Resource(myresGVR).Namespace(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fleetOn := func(v string) func(context.Context) error {
		return func(ctx context.Context) error {
			list, err := e.Dyn.Resource(myresGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			ts, err := e.Dyn.Resource(v1alpha1.TemplateSetGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			stable, _, _ := unstructured.NestedString(ts.Object, "status", "stableRevision")
			phase, _, _ := unstructured.NestedString(ts.Object, "status", "phase")
			if phase != "Complete" || len(list.Items) != n {
				return fmt.Errorf("phase %s, %d parents", phase, len(list.Items))
			}
			for _, p := range list.Items {
				rev, _, _ := unstructured.NestedString(p.Object, "status", "templateRevision")
				cm, err := e.Dyn.Resource(configMapGVR).Namespace(ns).Get(ctx, p.GetName(), metav1.GetOptions{})
				if err != nil {
					return err
				}
				got, _, _ := unstructured.NestedString(cm.Object, "data", "version")
				if rev != stable || got != v {
					return fmt.Errorf("%s: revision %q (stable %q), version %q, want %s", p.GetName(), rev, stable, got, v)
				}
			}
			return nil
		}
	}
	testutil.Eventually(t, 2*time.Minute, "every parent on v1", fleetOn("v1"))

	tmp := filepath.Join(dir, ".version.tmp")
	if err := os.WriteFile(tmp, []byte(`{{ define "version" }}v2{{ end }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "_version.tpl")); err != nil {
		t.Fatal(err)
	}
	testutil.Poll(t, 20*time.Millisecond, 2*time.Minute, "step 2 starts", func(context.Context) error {
		if h.step() < 2 {
			return fmt.Errorf("step %d", h.step())
		}
		return nil
	})
	if err := l.Kill(); err != nil {
		t.Fatalf("SIGKILL loom: %v", err)
	}
	t.Logf("killed loom at step %d", h.step())
	startLoom(t, root, ns)
	testutil.Eventually(t, 3*time.Minute, "every parent on v2", fleetOn("v2"))

	h.mu.Lock()
	defer h.mu.Unlock()
	if fmt.Sprint(h.steps) != "[1 2 3]" {
		t.Errorf("steps seen %v, want [1 2 3]: a restart must resume the rollout, not start it again", h.steps)
	}
	for i := range n {
		p := fmt.Sprintf("p-%d", i)
		if seq := h.versions[p]; fmt.Sprint(seq) != "[v1 v2]" {
			t.Errorf("%s's ConfigMap went through %v, want [v1 v2]: moved once, never back", p, seq)
		}
	}
}
