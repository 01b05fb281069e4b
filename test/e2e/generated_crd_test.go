//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
	"github.com/loom-operator/loom/test/env"
)

// The CRDs Generate makes of engine/crd's test sets (every compact type
// and marker, the OpenAPI form, a cluster-scoped kind, no schema, a scale
// subresource on two versions) are
// accepted by the API server and become Established; a parent of each
// gets the schema's defaults from the API server, and the status Loom
// writes is stored whole (nothing pruned). The kinds are in the group
// gen.test.loom.dev, deleted at the end.
func TestGeneratedCRDsAreServed(t *testing.T) {
	e := env.From(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := e.NewNamespace(t)
	tests := []struct {
		set, spec string
		// want is the spec the API server stores (with its defaults).
		want string
	}{
		{set: "compact", spec: `{image: nginx, database: {}}`,
			want: `{image: nginx, replicas: 1, ratio: 0.5, tier: frontend, debug: false, codes: [200], database: {name: app, size: 1Gi}}`},
		{set: "openapi", spec: `{rules: [{}], params: {any: [thing]}}`,
			want: `{rules: [{action: deny}], params: {any: [thing]}}`},
		{set: "cluster", spec: `{}`, want: `{size: 3}`},
		{set: "noschema", spec: `{whatever: {you: like}}`, want: `{whatever: {you: like}}`},
		{set: "scale", spec: `{image: nginx}`, want: `{image: nginx, replicas: 1}`},
	}
	for _, tt := range tests {
		t.Run(tt.set, func(t *testing.T) {
			c := testSetConfig(t, tt.set)
			gvr := installGenerated(ctx, t, c)
			parent := &unstructured.Unstructured{Object: map[string]any{"spec": decode(t, tt.spec)}}
			parent.SetAPIVersion(c.Parent.APIVersion)
			parent.SetKind(c.Parent.Kind)
			parent.SetName("gen")
			if c.Parent.ScopeOrDefault() == config.ScopeNamespaced {
				parent.SetNamespace(ns)
			}
			res := resourceOf(e, gvr, parent.GetNamespace())
			created, err := res.Create(ctx, parent, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create %s: %v", c.Parent.Kind, err)
			}
			if diff := cmp.Diff(decode(t, tt.want), created.Object["spec"]); diff != "" {
				t.Errorf("stored spec (-want +got):\n%s", diff)
			}
			checkStatusStored(ctx, t, res, created, c)
		})
	}
}

// installGenerated server-side applies the set's generated CRD, waits for
// it to be Established and deletes it when the test ends.
func installGenerated(ctx context.Context, t *testing.T, c config.Config) schema.GroupVersionResource {
	t.Helper()
	def, err := crd.Generate(c)
	if err != nil {
		t.Fatalf("Generate() = %v", err)
	}
	return installCRDDef(ctx, t, def)
}

// installCRDDef applies def, deletes it when the test ends, and waits
// until its kind is served.
func installCRDDef(ctx context.Context, t *testing.T, def *apiextv1.CustomResourceDefinition) schema.GroupVersionResource {
	t.Helper()
	e := env.From(t)
	obj, err := crd.Unstructured(def)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteCRD(t, def.Name) })
	if err := e.ApplyCRD(ctx, raw); err != nil {
		t.Fatalf("apply CRD %s: %v", def.Name, err)
	}
	gvr := schema.GroupVersionResource{Group: def.Spec.Group, Version: def.Spec.Versions[0].Name, Resource: def.Spec.Names.Plural}
	// Established comes a moment before the kind is served to clients:
	// wait until a list answers.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.Dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s is not served: %v", def.Name, err)
	}
	return gvr
}

// checkStatusStored writes the status Loom computes for the parent (a
// child, a template revision, the set's status fields) and checks that
// the API server stores it as written: a field the CRD lacks would be
// pruned.
func checkStatusStored(ctx context.Context, t *testing.T, res dynamic.ResourceInterface, parent *unstructured.Unstructured, c config.Config) {
	t.Helper()
	child := &unstructured.Unstructured{}
	child.SetAPIVersion("v1")
	child.SetKind("ConfigMap")
	child.SetName("gen")
	extra := map[string]any{}
	if c.Schema != nil && c.Schema.Status["url"] != nil {
		extra = map[string]any{"url": "http://gen", "endpoints": []any{"a", "b"}}
	}
	if c.Schema != nil && c.Schema.Scale != nil {
		// The scale subresource's status fields, which the status
		// template writes.
		extra = map[string]any{"replicas": int64(2), "selector": "app=gen"}
	}
	st := status.Compute(status.Input{
		Parent: parent, Rendered: []*unstructured.Unstructured{child}, Extra: extra,
		Now: time.Now(), Revision: "gen-1",
	})
	in := parent.DeepCopy()
	in.Object["status"] = st
	got, err := res.UpdateStatus(ctx, in, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("write Loom's status: %v", err)
	}
	if diff := cmp.Diff(jsonValue(t, st), got.Object["status"]); diff != "" {
		t.Errorf("stored status (-written +stored):\n%s", diff)
	}
}

// resourceOf is the client of a kind's objects in ns ("" for a
// cluster-scoped kind). The CRD's deletion deletes the objects.
func resourceOf(e *env.Env, gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return e.Dyn.Resource(gvr)
	}
	return e.Dyn.Resource(gvr).Namespace(ns)
}

// jsonValue is v as the API server returns it (JSON numbers as int64 or
// float64).
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// decode is an inline YAML value as the API server returns it.
func decode(t *testing.T, src string) any {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return jsonValue(t, json.RawMessage(raw))
}

// deleteCRD deletes a CRD the test made and waits until it is gone, so
// that a rerun creates it afresh.
func deleteCRD(t *testing.T, name string) {
	e := env.From(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := e.Dyn.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete CRD %s: %v", name, err)
		return
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := e.Dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("CRD %s is not gone: %v", name, err)
	}
}

// The shipped MyResource CRD (crds/, applied by TestMain) defaults a
// parent that gives only its image, as the hand-written one did.
func TestShippedCRDDefaults(t *testing.T) {
	e := env.From(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := e.NewNamespace(t)
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1", "kind": "MyResource",
		"metadata": map[string]any{"name": "gen", "namespace": ns},
		"spec":     map[string]any{"image": "nginx"},
	}}
	created, err := e.Dyn.Resource(myresGVR).Namespace(ns).Create(ctx, parent, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(decode(t, `{image: nginx, replicas: 1, port: 8080}`), created.Object["spec"]); diff != "" {
		t.Errorf("stored spec (-want +got):\n%s", diff)
	}
	bad := parent.DeepCopy()
	bad.SetName("gen-bad")
	bad.Object["spec"] = map[string]any{"image": "nginx", "config": map[string]any{"bad key": "x"}}
	_, err = e.Dyn.Resource(myresGVR).Namespace(ns).Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "config keys must be valid ConfigMap keys") {
		t.Errorf("create with a bad config key = %v, want the CEL rule's message", err)
	}
}

// The compact form's immutable marker and CEL validation rules are
// enforced by the API server: a create that breaks a rule is refused with
// the rule's message, as Admit refuses it offline, and an update that
// changes an immutable field is refused.
func TestCompactRulesAreEnforced(t *testing.T) {
	e := env.From(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := e.NewNamespace(t)
	c := testSetConfig(t, "compact")
	gvr := installGenerated(ctx, t, c)
	def, err := crd.Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	admitter, err := crd.NewAdmitter(def)
	if err != nil {
		t.Fatal(err)
	}
	res := e.Dyn.Resource(gvr).Namespace(ns)
	parent := func(name, spec string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": decode(t, spec)}}
		u.SetAPIVersion(c.Parent.APIVersion)
		u.SetKind(c.Parent.Kind)
		u.SetName(name)
		u.SetNamespace(ns)
		return u
	}
	for _, tt := range []struct{ name, spec, want string }{
		{name: "long", spec: `{image: nginx, database: {}, schedule: "` + strings.Repeat("x", 64) + `"}`, want: "\": at most 63 characters"},
		{name: "at", spec: `{image: nginx, database: {}, schedule: "@daily"}`, want: "spec.schedule: Invalid value: \"@daily\": failed rule: !self.startsWith('@')"},
	} {
		p := parent(tt.name, tt.spec)
		_, err := res.Create(ctx, p, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("create %s = %v, want Invalid with %q", tt.name, err, tt.want)
		}
		_, offline := admitter.Admit(p.UnstructuredContent())
		if err == nil || offline == nil || offline.Error() != err.Error() {
			t.Errorf("Admit(%s) = %v, want the API server's %v", tt.name, offline, err)
		}
	}
	created, err := res.Create(ctx, parent("app", `{image: nginx, database: {}, name: web}`), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedField(created.Object, "api", "spec", "name")
	_, err = res.Update(ctx, created, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "name is immutable") {
		t.Errorf("update of the immutable spec.name = %v, want Invalid with %q", err, "name is immutable")
	}
	unstructured.SetNestedField(created.Object, "web", "spec", "name")
	unstructured.SetNestedField(created.Object, int64(3), "spec", "replicas")
	if _, err := res.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Errorf("update that keeps spec.name = %v, want nil", err)
	}
}

// testSetConfig reads the loom.yaml of one of engine/crd's test sets.
func testSetConfig(t *testing.T, name string) config.Config {
	t.Helper()
	e := env.From(t)
	raw, err := os.ReadFile(filepath.Join(e.Root, "engine", "crd", "testdata", "sets", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The CRDs of chart sets, one from the chart's values.schema.json and one
// inferred from its values.yaml, are accepted by the API server: it
// stores a parent whose values fit, and refuses one whose values the
// schema refuses, as loom render does offline. It keeps a null, which
// removes the chart's default as in Helm's values, even where
// values.schema.json has an enum (web's image.pullPolicy).
func TestChartSetCRDsAreServed(t *testing.T) {
	e := env.From(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := e.NewNamespace(t)
	for _, tt := range []struct {
		set, good, nulls, bad, refusal string
	}{
		{set: "web", good: `{replicaCount: 3, image: {pullPolicy: Always}, extra: {kept: true}}`, nulls: `{replicaCount: null, image: {pullPolicy: null, tag: null}}`,
			bad: `{image: {pullPolicy: Sometimes}}`, refusal: "spec.image.pullPolicy"},
		{set: "secrets", good: `{auth: {password: pw}, other: 1}`, nulls: `{auth: {password: null}}`, bad: `{auth: {password: 5}}`, refusal: "spec.auth.password"},
	} {
		t.Run(tt.set, func(t *testing.T) {
			set, err := render.Load(filepath.Join(e.Root, "engine/render/testdata/chartsets", tt.set))
			if err != nil {
				t.Fatal(err)
			}
			def, err := set.CRD()
			if err != nil {
				t.Fatal(err)
			}
			// A kind of its own, so that no other test's CRD is touched.
			def.Spec.Group = "charts.gen.test.loom.dev"
			def.Name = def.Spec.Names.Plural + "." + def.Spec.Group
			gvr := installCRDDef(ctx, t, def)
			mk := func(name, spec string) *unstructured.Unstructured {
				u := &unstructured.Unstructured{Object: map[string]any{"spec": decode(t, spec)}}
				u.SetAPIVersion(def.Spec.Group + "/" + def.Spec.Versions[0].Name)
				u.SetKind(def.Spec.Names.Kind)
				u.SetName(name)
				return u
			}
			stored, err := e.Dyn.Resource(gvr).Namespace(ns).Create(ctx, mk("good", tt.good), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("good values refused: %v", err)
			}
			if got, want := stored.Object["spec"], decode(t, tt.good); !cmp.Equal(got, want) {
				t.Errorf("stored spec %v, want %v", got, want)
			}
			stored, err = e.Dyn.Resource(gvr).Namespace(ns).Create(ctx, mk("nulls", tt.nulls), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("nulls refused: %v", err)
			}
			if diff := cmp.Diff(decode(t, tt.nulls), stored.Object["spec"]); diff != "" {
				t.Errorf("the API server did not keep the nulls (-want +stored):\n%s", diff)
			}
			_, err = e.Dyn.Resource(gvr).Namespace(ns).Create(ctx, mk("bad", tt.bad), metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.refusal) {
				t.Errorf("bad values: %v, want a refusal of %s", err, tt.refusal)
			}
		})
	}
}
