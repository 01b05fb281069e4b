//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/cert"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// conversion is one test's kind of two versions, served through the
// conversion webhook of a bin/loom run started by the test.
type conversion struct {
	ns, group   string
	webhookAddr string
	loom        *testutil.Process
	metricsAddr string
}

// gvr is the kind's resource at version.
func (c *conversion) gvr(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: c.group, Version: version, Resource: "widgets"}
}

// startConversion writes a set of the kind Widget (hub v1, spec.replicas;
// v1alpha1, spec.size, renamed), installs a test-only CRD of both versions
// whose conversion webhook is https://127.0.0.1:PORT/convert, adopted by
// Loom (loom.dev/adopt) so that Loom injects its caBundle, and starts
// bin/loom run serving the webhook on PORT with extra flags. It returns
// once the CRD carries Loom's caBundle.
func startConversion(t *testing.T, extra ...string) *conversion {
	t.Helper()
	e := env.From(t)
	ctx := context.Background()
	c := &conversion{ns: e.NewNamespace(t), webhookAddr: testutil.FreeAddr(t), metricsAddr: testutil.FreeAddr(t)}
	c.group = c.ns + ".conv.e2e.loom.dev"
	templates := t.TempDir()
	testutil.WriteFiles(t, filepath.Join(templates, "widgets"), map[string]string{
		"loom.yaml": fmt.Sprintf(`parent: {apiVersion: %s/v1, kind: Widget, plural: widgets}
schema: {spec: {replicas: integer}}
versions:
- name: v1alpha1
  schema: {spec: {size: integer}}
  conversion: {moves: [{rename: {from: spec.size, to: spec.replicas}}]}
`, c.group),
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-widget\ndata:\n  replicas: {{ .Spec.replicas | quote }}\n",
	})
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.%[1]s
  labels: {applyset.kubernetes.io/is-parent-type: "true"}
  annotations: {loom.dev/adopt: loom}
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {url: "https://%[2]s/convert"}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}}}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1alpha1
    served: true
    storage: false
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, c.group, c.webhookAddr)
	t.Cleanup(func() { deleteCRD(t, "widgets."+c.group) })
	if err := e.ApplyCRD(ctx, []byte(crd)); err != nil {
		t.Fatalf("install the Widget CRD: %v", err)
	}
	args := append([]string{"run", "--templates", templates, "--namespace", c.ns, "--kubeconfig", e.Kubeconfig,
		"--metrics-bind-address", c.metricsAddr, "--webhook-bind-address", c.webhookAddr, "--loom-namespace", c.ns}, extra...)
	c.loom = testutil.StartProcess(t, filepath.Join(t.TempDir(), "loom.log"), e.Binary, args...)
	t.Cleanup(func() { c.loom.Stop(t, 30*time.Second) })
	testutil.Eventually(t, 60*time.Second, "Loom injects its caBundle into the CRD", func(ctx context.Context) error {
		if done, err := c.loom.Exited(); done {
			return fmt.Errorf("loom exited: %v\n%s", err, c.loom.Tail(20))
		}
		if cas := c.caBundle(ctx, t); len(cas) == 0 {
			return errNotYet
		}
		return nil
	})
	return c
}

// caBundle reads the CRD's caBundle.
func (c *conversion) caBundle(ctx context.Context, t *testing.T) []*x509.Certificate {
	t.Helper()
	u, err := env.From(t).Dyn.Resource(crdGVR).Get(ctx, "widgets."+c.group, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	s, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	b, _ := base64.StdEncoding.DecodeString(s)
	cas, _ := cert.ParseCertsPEM(b)
	return cas
}

// widget is a Widget at version with the size field of that version.
func (c *conversion) widget(version, name string, size int64) *unstructured.Unstructured {
	field := "replicas"
	if version == "v1alpha1" {
		field = "size"
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": c.group + "/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": c.ns},
		"spec":     map[string]any{field: size},
	}}
	return u
}

// metric sums one of Loom's metrics over the samples that match.
func (c *conversion) metric(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := testutil.ScrapeMetrics(ctx, "http://"+c.metricsAddr+"/metrics")
	if err != nil {
		t.Fatalf("read loom's metrics: %v", err)
	}
	return m.Sum(name, match)
}

// The API server calls Loom's webhook over TLS, trusting the CA Loom
// injected: a Widget created as v1alpha1 reads as v1 with the field
// renamed, and edited as v1 it reads back as v1alpha1.
func TestConversionWebhookServesBothVersions(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	c := startConversion(t)
	var created *unstructured.Unstructured
	testutil.Eventually(t, 30*time.Second, "a Widget is created as v1alpha1 through the webhook", func(ctx context.Context) error {
		var err error
		created, err = e.Dyn.Resource(c.gvr("v1alpha1")).Namespace(c.ns).Create(ctx, c.widget("v1alpha1", "w", 3), metav1.CreateOptions{})
		return err
	})
	if size, _, _ := unstructured.NestedInt64(created.Object, "spec", "size"); size != 3 {
		t.Errorf("created as v1alpha1, the answer has spec.size %d, want 3: %v", size, created.Object["spec"])
	}
	ctx := context.Background()
	v1, err := e.Dyn.Resource(c.gvr("v1")).Namespace(c.ns).Get(ctx, "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := v1.Object["spec"]; fmt.Sprint(got) != "map[replicas:3]" {
		t.Errorf("read as v1: spec %v, want map[replicas:3]", got)
	}
	if err := unstructured.SetNestedField(v1.Object, int64(5), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dyn.Resource(c.gvr("v1")).Namespace(c.ns).Update(ctx, v1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	old, err := e.Dyn.Resource(c.gvr("v1alpha1")).Namespace(c.ns).Get(ctx, "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := old.Object["spec"]; fmt.Sprint(got) != "map[size:5]" {
		t.Errorf("edited as v1, read as v1alpha1: spec %v, want map[size:5]", got)
	}
	if n := c.metric(t, "loom_conversion_reviews_total", map[string]string{"kind": "Widget", "result": "success"}); n == 0 {
		t.Error("loom_conversion_reviews_total{kind=Widget,result=success} is 0")
	}
	if n := c.metric(t, "loom_conversion_webhook_serving", nil); n != 1 {
		t.Errorf("loom_conversion_webhook_serving = %v, want 1", n)
	}
	if n := c.metric(t, "loom_conversion_kinds", nil); n != 1 {
		t.Errorf("loom_conversion_kinds = %v, want 1", n)
	}
}

// With a serving certificate of 15 s and a CA of 45 s, Loom rotates both
// several times while the API server converts a stream of lists, and no
// conversion fails.
func TestConversionWebhookRotatesUnderLoad(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	c := startConversion(t, "--webhook-cert-lifetime=15s", "--webhook-ca-lifetime=45s", "--webhook-ca-propagation=3s")
	ctx := context.Background()
	for i := range 5 {
		name := fmt.Sprintf("w%d", i)
		testutil.Eventually(t, 30*time.Second, "Widget "+name+" is created as v1alpha1", func(ctx context.Context) error {
			_, err := e.Dyn.Resource(c.gvr("v1alpha1")).Namespace(c.ns).Create(ctx, c.widget("v1alpha1", name, int64(i)), metav1.CreateOptions{})
			return err
		})
	}
	const run = 100 * time.Second
	var lists, failures atomic.Int64
	var firstErr atomic.Value
	stop := time.Now().Add(run)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for time.Now().Before(stop) {
			list, err := e.Dyn.Resource(c.gvr("v1alpha1")).Namespace(c.ns).List(ctx, metav1.ListOptions{})
			lists.Add(1)
			if err == nil && len(list.Items) != 5 {
				err = fmt.Errorf("%d Widgets listed, want 5", len(list.Items))
			}
			if err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// What the Secret held along the way: the CAs and serving certificates.
	// And each second a new TLS handshake, trusting what the CRD's
	// caBundle holds then, as the API server's next connection would: its
	// stream of lists above may ride one kept-alive connection, whose
	// certificate was checked once.
	cas, servings := map[string]bool{}, map[string]bool{}
	var handshakes, untrusted int
	var firstUntrusted error
	for time.Now().Before(stop) {
		handshakes++
		if err := c.handshake(ctx, t); err != nil {
			untrusted++
			if firstUntrusted == nil {
				firstUntrusted = err
			}
		}
		sec, err := e.Kube.CoreV1().Secrets(c.ns).Get(ctx, "loom-webhook-tls", metav1.GetOptions{})
		if err == nil {
			if certs, err := cert.ParseCertsPEM(sec.Data["ca.crt"]); err == nil {
				cas[certs[0].SerialNumber.String()] = true
			}
			if certs, err := cert.ParseCertsPEM(sec.Data[corev1.TLSCertKey]); err == nil {
				servings[certs[0].SerialNumber.String()] = true
			}
		}
		time.Sleep(time.Second)
	}
	<-done
	t.Logf("%d lists in v1alpha1 and %d handshakes over %s; %d CAs and %d serving certificates seen", lists.Load(), handshakes, run, len(cas), len(servings))
	if untrusted > 0 {
		t.Errorf("%d of %d handshakes met a certificate the CRD's caBundle does not trust; the first: %v", untrusted, handshakes, firstUntrusted)
	}
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d lists failed during rotation; the first: %v\n%s", n, lists.Load(), firstErr.Load(), tail(c.loom, 30))
	}
	if len(cas) < 3 || len(servings) < 6 {
		t.Errorf("%d CAs and %d serving certificates in %s: want at least 3 and 6 (rotation at 2/3 of 45s and 15s)", len(cas), len(servings), run)
	}
	if n := c.metric(t, "loom_conversion_reviews_total", map[string]string{"result": "failure"}); n > 0 {
		t.Errorf("loom_conversion_reviews_total{result=failure} = %v, want 0", n)
	}
}

// handshake opens a TLS connection to the webhook, trusting the CAs of the
// CRD's caBundle and checking the name 127.0.0.1, as the API server does.
func (c *conversion) handshake(ctx context.Context, t *testing.T) error {
	pool := x509.NewCertPool()
	for _, ca := range c.caBundle(ctx, t) {
		pool.AddCert(ca)
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := d.DialContext(hctx, "tcp", c.webhookAddr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// tail is the last n lines of Loom's log, for a failure's message.
func tail(p *testutil.Process, n int) string { return strings.TrimSpace(p.Tail(n)) }
