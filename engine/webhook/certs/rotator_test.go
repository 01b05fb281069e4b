package certs

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"
)

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdYAML returns a CRD named name, labelled as Loom's generated CRDs
// are, applied by manager, with conversion strategy.
func crdYAML(t *testing.T, name, manager, strategy string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: `+name+`
  labels: {applyset.kubernetes.io/is-parent-type: "true"}
  managedFields: [{manager: `+manager+`, operation: Apply, apiVersion: apiextensions.k8s.io/v1}]
spec:
  conversion:
    strategy: `+strategy+`
`), &u.Object); err != nil {
		t.Fatal(err)
	}
	if strategy == "Webhook" {
		_ = unstructured.SetNestedField(u.Object, "https://127.0.0.1:9443/convert", "spec", "conversion", "webhook", "clientConfig", "url")
	}
	return u
}

// caBundleOf reads a CRD's caBundle from the fake.
func caBundleOf(t *testing.T, client *dynamicfake.FakeDynamicClient, name string) []*x509.Certificate {
	t.Helper()
	u, err := client.Resource(crdsGVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	if s == "" {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	cas, err := cert.ParseCertsPEM(b)
	if err != nil {
		t.Fatal(err)
	}
	return cas
}

// TestRotatorReplicasAgree runs two replicas' Rotators on one Secret, and
// moves the clock through a CA rotation: they create one CA between them,
// serve what the Secret holds, inject the bundle into Loom's webhook CRD
// only (not another manager's, not a strategy None one), and move the
// serving certificate to a new CA only once it is injected.
func TestRotatorReplicasAgree(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdsGVR: "CustomResourceDefinitionList"},
		crdToObj(crdYAML(t, "webapps.example.com", "loom", "Webhook")),
		crdToObj(crdYAML(t, "others.example.com", "kubectl", "Webhook")),
		crdToObj(crdYAML(t, "plain.example.com", "loom", "None")))
	now := t0
	clock := func() time.Time { return now }
	replica := func() *Rotator {
		return NewRotator(Options{
			Secrets: kube.CoreV1().Secrets("loom-system"), Lifetimes: life, Hosts: local, Now: clock,
			Injector: &Injector{CRDs: dyn.Resource(crdsGVR), FieldManager: "loom", Now: clock},
		})
	}
	a, b := replica(), replica()
	for _, r := range []*Rotator{a, b} {
		if _, err := r.pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sec, err := kube.CoreV1().Secrets("loom-system").Get(ctx, DefaultSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sec.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %s, want %s", sec.Type, corev1.SecretTypeTLS)
	}
	first, err := Decode(sec.Data)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Rotator{"a": a, "b": b} {
		if !r.Serving() || !r.state.Load().Serving.Equal(first.Serving) {
			t.Errorf("replica %s does not serve the Secret's certificate", name)
		}
	}
	if diff := cmp.Diff(first.CAs, caBundleOf(t, dyn, "webapps.example.com")); diff != "" {
		t.Errorf("Loom's webhook CRD caBundle (-want +got):\n%s", diff)
	}
	for _, name := range []string{"others.example.com", "plain.example.com"} {
		if cas := caBundleOf(t, dyn, name); cas != nil {
			t.Errorf("CRD %s got a caBundle; only Loom's webhook CRDs do", name)
		}
	}

	// The CA is 2/3 through its life: a new CA joins; a pass injects it and
	// moves the serving certificate once it has propagated.
	now = t0.Add(50 * time.Minute) // reissued: it lives until 80m
	if _, err := b.pass(ctx); err != nil {
		t.Fatal(err)
	}
	now = t0.Add(60 * time.Minute)
	if _, err := a.pass(ctx); err != nil {
		t.Fatal(err)
	}
	s := a.state.Load()
	if len(s.CAs) != 2 || !signedBy(s.Serving, s.CAs[1]) {
		t.Fatalf("after the CA's 2/3: %d CAs, serving signed by %s; want 2 CAs and the old one still signing the served certificate", len(s.CAs), s.Serving.Issuer.CommonName)
	}
	if diff := cmp.Diff(s.CAs, caBundleOf(t, dyn, "webapps.example.com")); diff != "" {
		t.Errorf("caBundle with the new CA (-want +got):\n%s", diff)
	}
	now = now.Add(life.Propagation)
	if _, err := b.pass(ctx); err != nil {
		t.Fatal(err)
	}
	s = b.state.Load()
	if !signedBy(s.Serving, s.CAs[0]) || !b.Serving() {
		t.Errorf("after propagation the serving certificate is not the new CA's")
	}
	if _, err := a.pass(ctx); err != nil {
		t.Fatal(err)
	}
	if !a.state.Load().Serving.Equal(s.Serving) {
		t.Errorf("replica a does not serve what b wrote")
	}
}

// crdToObj is u as a runtime.Object for the fake's tracker.
func crdToObj(u *unstructured.Unstructured) runtime.Object { return u }

func TestEncodeDecode(t *testing.T) {
	s := do(t, t0, nil, Create, local)
	s = do(t, t0.Add(60*time.Minute), s, AddCA, local)
	data, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.CAs) != 2 || !got.CAs[0].Equal(s.CAs[0]) || !got.CAs[1].Equal(s.CAs[1]) || !got.Serving.Equal(s.Serving) {
		t.Errorf("Decode(Encode(s)) is not s")
	}
	// The CA key of another CA is refused; a broken serving key leaves
	// no serving certificate.
	other := do(t, t0, nil, Create, local)
	odata, _ := other.Encode()
	bad := map[string][]byte{KeyCABundle: data[KeyCABundle], KeyCAKey: odata[KeyCAKey]}
	if _, err := Decode(bad); err == nil {
		t.Errorf("Decode accepted a CA key that is not the CA's")
	}
	data[corev1.TLSPrivateKeyKey] = odata[corev1.TLSPrivateKeyKey]
	if got, err := Decode(data); err != nil || got.Serving != nil {
		t.Errorf("Decode with another serving key: %v, serving %v; want no serving certificate", err, got.Serving)
	}
}

// TestAnnotate marks Loom's webhook CRDs for cert-manager's cainjector,
// and no other.
func TestAnnotate(t *testing.T) {
	ctx := context.Background()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdsGVR: "CustomResourceDefinitionList"},
		crdToObj(crdYAML(t, "webapps.example.com", "loom", "Webhook")),
		crdToObj(crdYAML(t, "others.example.com", "kubectl", "Webhook")),
		crdToObj(crdYAML(t, "plain.example.com", "loom", "None")))
	in := &Injector{CRDs: dyn.Resource(crdsGVR), FieldManager: "loom"}
	if err := in.Annotate(ctx, "loom-system/loom-webhook"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"webapps.example.com": "loom-system/loom-webhook", "others.example.com": "", "plain.example.com": ""} {
		u, err := dyn.Resource(crdsGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := u.GetAnnotations()[CAInjectorAnnotation]; got != want {
			t.Errorf("CRD %s: %s=%q, want %q", name, CAInjectorAnnotation, got, want)
		}
	}
}

// TestRotatorWaitsForExpectedCRD: while a set's CRD is not installed yet,
// a pass says to look again in seconds, not at the next resync; once it
// is there, the caBundle is injected.
func TestRotatorWaitsForExpectedCRD(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdsGVR: "CustomResourceDefinitionList"})
	now := t0
	clock := func() time.Time { return now }
	webapp := schema.GroupKind{Group: "example.com", Kind: "WebApp"}
	r := NewRotator(Options{
		Secrets: kube.CoreV1().Secrets("loom-system"), Lifetimes: life, Hosts: local, Now: clock, Resync: time.Minute,
		Injector: &Injector{CRDs: dyn.Resource(crdsGVR), FieldManager: "loom", Now: clock,
			Expect: func() []schema.GroupKind { return []schema.GroupKind{webapp} }},
	})
	next, err := r.pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(missingRetry); !next.Equal(want) {
		t.Errorf("with the CRD missing, next pass at t0+%s, want t0+%s", next.Sub(t0), want.Sub(t0))
	}
	c := crdYAML(t, "webapps.example.com", "loom", "Webhook")
	_ = unstructured.SetNestedField(c.Object, "example.com", "spec", "group")
	_ = unstructured.SetNestedField(c.Object, "WebApp", "spec", "names", "kind")
	if _, err := dyn.Resource(crdsGVR).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if next, err = r.pass(ctx); err != nil {
		t.Fatal(err)
	}
	if !next.After(now.Add(time.Minute)) {
		t.Errorf("with the CRD injected, next pass at t0+%s, want the plan's own", next.Sub(t0))
	}
	if cas := caBundleOf(t, dyn, "webapps.example.com"); len(cas) != 1 {
		t.Errorf("%d CAs injected, want 1", len(cas))
	}
}

// TestInjectOnlyItsKinds: a Loom injects only the CRDs of the kinds it
// serves, not another Loom's in the same cluster, which has a CA of its
// own (both CRDs are Loom's by field manager and label).
func TestInjectOnlyItsKinds(t *testing.T) {
	ctx := context.Background()
	mine, theirs := crdYAML(t, "webapps.example.com", "loom", "Webhook"), crdYAML(t, "databases.example.com", "loom", "Webhook")
	for _, c := range []struct {
		u    *unstructured.Unstructured
		kind string
	}{{mine, "WebApp"}, {theirs, "Database"}} {
		_ = unstructured.SetNestedField(c.u.Object, "example.com", "spec", "group")
		_ = unstructured.SetNestedField(c.u.Object, c.kind, "spec", "names", "kind")
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdsGVR: "CustomResourceDefinitionList"}, mine, theirs)
	in := &Injector{CRDs: dyn.Resource(crdsGVR), FieldManager: "loom",
		Expect: func() []schema.GroupKind { return []schema.GroupKind{{Group: "example.com", Kind: "WebApp"}} }}
	s := do(t, time.Now(), nil, Create, local)
	injected, err := in.Inject(ctx, s.Bundle(), s.CAs[0])
	if err != nil || !injected {
		t.Fatalf("Inject = %v, %v; want true, nil", injected, err)
	}
	if cas := caBundleOf(t, dyn, "webapps.example.com"); len(cas) != 1 {
		t.Errorf("its own CRD has %d CAs, want 1", len(cas))
	}
	if cas := caBundleOf(t, dyn, "databases.example.com"); cas != nil {
		t.Errorf("another Loom's CRD got %d CAs, want none", len(cas))
	}
}

// An injection that fails (the CRD changed under the patch: the API
// server writes its status just after --install-crds creates it) is tried
// again within seconds, not at the next resync: until it lands, the API
// server trusts no certificate of Loom's and every conversion fails.
func TestRotatorRetriesAFailedInjectionSoon(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdsGVR: "CustomResourceDefinitionList"})
	c := crdYAML(t, "webapps.example.com", "loom", "Webhook")
	_ = unstructured.SetNestedField(c.Object, "example.com", "spec", "group")
	_ = unstructured.SetNestedField(c.Object, "WebApp", "spec", "names", "kind")
	if _, err := dyn.Resource(crdsGVR).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	conflicts := 1
	dyn.PrependReactor("patch", "customresourcedefinitions", func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "webapps.example.com", errors.New("the object has been modified"))
	})
	now := t0
	clock := func() time.Time { return now }
	webapp := schema.GroupKind{Group: "example.com", Kind: "WebApp"}
	r := NewRotator(Options{
		Secrets: kube.CoreV1().Secrets("loom-system"), Lifetimes: life, Hosts: local, Now: clock, Resync: time.Minute,
		Injector: &Injector{CRDs: dyn.Resource(crdsGVR), FieldManager: "loom", Now: clock,
			Expect: func() []schema.GroupKind { return []schema.GroupKind{webapp} }},
	})
	next, err := r.pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(missingRetry); next.After(want) {
		t.Errorf("after a failed injection, next pass at t0+%s, want by t0+%s", next.Sub(t0), want.Sub(t0))
	}
	if next, err = r.pass(ctx); err != nil {
		t.Fatal(err)
	}
	if cas := caBundleOf(t, dyn, "webapps.example.com"); len(cas) != 1 {
		t.Errorf("%d CAs injected after the retry, want 1", len(cas))
	}
	if !next.After(now.Add(time.Minute)) {
		t.Errorf("with the CRD injected, next pass at t0+%s, want the plan's own", next.Sub(t0))
	}
}
