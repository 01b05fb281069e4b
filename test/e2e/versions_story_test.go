//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// gadgets is one test's set of the kind Gadget, of two versions, whose
// CRD bin/loom run --install-crds generates and points at its own webhook.
type gadgets struct {
	ns, group, templates  string
	metricsAddr, hookAddr string
	loom                  *testutil.Process
}

// gadgetSet writes the set: the hub v1 (spec.replicas, spec.tier, which
// only v1 holds) and v1alpha1 (spec.size, renamed to replicas), stored in
// v1. The child, a ConfigMap, reads the hub. v1beta1 converts with
// templates, and its fromHub fails on a Gadget of more than 100 replicas.
func gadgetSet(t *testing.T) *gadgets {
	t.Helper()
	e := env.From(t)
	g := &gadgets{ns: e.NewNamespace(t), templates: t.TempDir(), metricsAddr: testutil.FreeAddr(t), hookAddr: testutil.FreeAddr(t)}
	g.group = g.ns + ".gadgets.e2e.loom.dev"
	testutil.WriteFiles(t, filepath.Join(g.templates, "gadgets"), map[string]string{
		"loom.yaml": fmt.Sprintf(`parent: {apiVersion: %s/v1, kind: Gadget, plural: gadgets}
schema:
  spec:
    replicas: integer
    tier: string
versions:
- name: v1alpha1
  schema: {spec: {size: integer}}
  conversion: {moves: [{rename: {from: spec.size, to: spec.replicas}}]}
- name: v1beta1
  schema: {spec: {count: string}}
  conversion: {toHub: conversion/up.yaml, fromHub: conversion/down.yaml}
`, g.group),
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-gadget\ndata:\n  replicas: {{ .Spec.replicas | quote }}\n  tier: {{ .Spec.tier | default \"none\" | quote }}\n",
		"conversion/up.yaml": "{{- if not (regexMatch \"^[0-9]+$\" .Spec.count) }}{{ fail \"count must be a whole number\" }}{{ end }}\n" +
			"replicas: {{ .Spec.count | atoi }}\n",
		"conversion/down.yaml": "{{- if gt (int .Spec.replicas) 100 }}\n" +
			"{{- fail \"v1beta1 holds at most 100 replicas\" }}\n" +
			"{{- end }}\ncount: {{ .Spec.replicas | quote }}\n",
	})
	return g
}

// start runs bin/loom run over the set with args; it returns once Loom
// serves (its /readyz).
func (g *gadgets) start(t *testing.T, args ...string) *testutil.Process {
	t.Helper()
	e := env.From(t)
	all := append([]string{"run", "--templates", g.templates, "--namespace", g.ns, "--kubeconfig", e.Kubeconfig,
		"--metrics-bind-address", g.metricsAddr, "--loom-namespace", g.ns}, args...)
	p := testutil.StartProcess(t, filepath.Join(t.TempDir(), "loom.log"), e.Binary, all...)
	t.Cleanup(func() {
		if done, _ := p.Exited(); !done {
			p.Stop(t, 30*time.Second)
		}
	})
	g.loom = p
	return p
}

func (g *gadgets) gvr(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: g.group, Version: version, Resource: "gadgets"}
}

// gadget is a Gadget at version with spec.
func (g *gadgets) gadget(version, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": g.group + "/" + version, "kind": "Gadget",
		"metadata": map[string]any{"name": name, "namespace": g.ns}, "spec": spec,
	}}
}

// childData waits for the Gadget's ConfigMap to hold want.
func (g *gadgets) childData(t *testing.T, name string, want map[string]string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, fmt.Sprintf("ConfigMap %s-gadget holds %v", name, want), func(ctx context.Context) error {
		if done, err := g.loom.Exited(); done {
			return fmt.Errorf("loom exited: %v\n%s", err, g.loom.Tail(20))
		}
		cm, err := env.From(t).Kube.CoreV1().ConfigMaps(g.ns).Get(ctx, name+"-gadget", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for k, v := range want {
			if cm.Data[k] != v {
				return fmt.Errorf("data %v", cm.Data)
			}
		}
		return nil
	})
}

// The whole life of a parent of two versions, with the CRD that loom run
// --install-crds generates, and the API server calling Loom's webhook
// over TLS: created as v1alpha1, read as v1, edited as v1 with a field
// only v1 holds, read and written back as v1alpha1, and the field is
// still there; a conversion template's failure reaches the client with
// its file:line and stores nothing; and with no webhook, Loom still
// reconciles the parents stored in v1 while a read of v1alpha1 fails with
// a clear error.
func TestVersionsOfAParentEndToEnd(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	g := gadgetSet(t)
	t.Cleanup(func() { deleteCRD(t, "gadgets."+g.group) })
	g.start(t, "--install-crds", "--webhook-bind-address", g.hookAddr)
	var created *unstructured.Unstructured
	testutil.Eventually(t, 60*time.Second, "a Gadget is created as v1alpha1 through the webhook of the generated CRD", func(ctx context.Context) error {
		if done, err := g.loom.Exited(); done {
			return fmt.Errorf("loom exited: %v\n%s", err, g.loom.Tail(20))
		}
		var err error
		created, err = e.Dyn.Resource(g.gvr("v1alpha1")).Namespace(g.ns).Create(ctx, g.gadget("v1alpha1", "g", map[string]any{"size": int64(3)}), metav1.CreateOptions{})
		return err
	})
	if size, _, _ := unstructured.NestedInt64(created.Object, "spec", "size"); size != 3 {
		t.Errorf("created as v1alpha1: spec %v, want size 3", created.Object["spec"])
	}
	g.childData(t, "g", map[string]string{"replicas": "3", "tier": "none"})
	ctx := context.Background()
	crd, err := e.Dyn.Resource(crdGVR).Get(ctx, "gadgets."+g.group, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if url, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "url"); url != "https://"+g.hookAddr+"/convert" {
		t.Errorf("the generated CRD's webhook URL is %q, want https://%s/convert", url, g.hookAddr)
	}

	// Edited as v1, with the field only v1 holds.
	v1 := g.setSpec(t, "v1", "g", map[string]any{"replicas": int64(5), "tier": "gold"})
	if fmt.Sprint(v1.Object["spec"]) != "map[replicas:3]" {
		t.Errorf("read as v1: spec %v, want map[replicas:3]", v1.Object["spec"])
	}
	g.childData(t, "g", map[string]string{"replicas": "5", "tier": "gold"})

	// Read and written back as v1alpha1: tier rides in the annotation.
	old := g.setSpec(t, "v1alpha1", "g", map[string]any{"size": int64(6)})
	if fmt.Sprint(old.Object["spec"]) != "map[size:5]" {
		t.Errorf("read as v1alpha1: spec %v, want map[size:5]", old.Object["spec"])
	}
	if data := old.GetAnnotations()["loom.dev/conversion-data"]; !strings.Contains(data, "gold") {
		t.Errorf("read as v1alpha1: loom.dev/conversion-data %q does not keep tier gold", data)
	}
	v1, err = e.Dyn.Resource(g.gvr("v1")).Namespace(g.ns).Get(ctx, "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(v1.Object["spec"]) != "map[replicas:6 tier:gold]" {
		t.Errorf("edited as v1alpha1, read as v1: spec %v, want map[replicas:6 tier:gold]", v1.Object["spec"])
	}
	if _, ok := v1.GetAnnotations()["loom.dev/conversion-data"]; ok {
		t.Errorf("read as v1: the conversion data is still there: %v", v1.GetAnnotations())
	}
	g.childData(t, "g", map[string]string{"replicas": "6", "tier": "gold"})

	// A conversion template's failure: the client sees it at its line,
	// and nothing is stored.
	big := g.gadget("v1", "big", map[string]any{"replicas": int64(500)})
	if _, err := e.Dyn.Resource(g.gvr("v1")).Namespace(g.ns).Create(ctx, big, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Dyn.Resource(g.gvr("v1beta1")).Namespace(g.ns).Get(ctx, "big", metav1.GetOptions{})
	if err == nil || !strings.Contains(err.Error(), "down.yaml:2") || !strings.Contains(err.Error(), "at most 100 replicas") {
		t.Errorf("read as v1beta1 of a Gadget v1beta1 cannot hold: %v, want the error of conversion/down.yaml:2", err)
	}
	_, err = e.Dyn.Resource(g.gvr("v1beta1")).Namespace(g.ns).Create(ctx, g.gadget("v1beta1", "bad", map[string]any{"count": "many"}), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "up.yaml:1") {
		t.Errorf("create as v1beta1 with a count that is no number: %v, want the error of conversion/up.yaml:1", err)
	}
	if _, err := e.Dyn.Resource(g.gvr("v1")).Namespace(g.ns).Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Gadget whose conversion failed: %v, want it not stored", err)
	}
	if n := g.metric(t, "loom_conversion_reviews_total", map[string]string{"kind": "Gadget", "result": "failure"}); n < 2 {
		t.Errorf("loom_conversion_reviews_total{kind=Gadget,result=failure} = %v, want at least 2", n)
	}

	// No webhook: the same set, no conversion served, the CRD left as it
	// is. Parents stored in v1 are still reconciled.
	g.loom.Stop(t, 30*time.Second)
	g.start(t, "--webhook-bind-address", "0")
	g.setSpec(t, "v1", "g", map[string]any{"replicas": int64(7), "tier": "silver"})
	g.childData(t, "g", map[string]string{"replicas": "7", "tier": "silver"})
	_, err = e.Dyn.Resource(g.gvr("v1alpha1")).Namespace(g.ns).Get(ctx, "g", metav1.GetOptions{})
	if err == nil || !strings.Contains(err.Error(), "conversion webhook") {
		t.Errorf("read as v1alpha1 with no webhook: %v, want the API server's conversion webhook error", err)
	}
}

// setSpec writes spec into the Gadget name as version, reading it afresh
// on a conflict (Loom writes its status meanwhile); it returns the object
// it read last, before the write.
func (g *gadgets) setSpec(t *testing.T, version, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	var read *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if read, err = env.From(t).Dyn.Resource(g.gvr(version)).Namespace(g.ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		u := read.DeepCopy()
		u.Object["spec"] = spec
		_, err = env.From(t).Dyn.Resource(g.gvr(version)).Namespace(g.ns).Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("write %s as %s: %v", name, version, err)
	}
	return read
}

// metric sums one of Loom's metrics over the samples that match.
func (g *gadgets) metric(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := testutil.ScrapeMetrics(ctx, "http://"+g.metricsAddr+"/metrics")
	if err != nil {
		t.Fatalf("read loom's metrics: %v", err)
	}
	return m.Sum(name, match)
}
