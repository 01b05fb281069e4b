package controller

// Unit tests of the controller's pure decisions: which events enqueue a
// parent, which errors are retried, and which Events a status transition
// records. Reconcile behaviour is tested against a real API server in
// test/e2e.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/yaml"
)

func u(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(j, &obj); err != nil { // numbers as int64, like the API server's
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// newTestController returns a controller with a queue and a parent cache
// that no informer fills: tests put parents in it themselves.
func newTestController(q workqueue.TypedRateLimitingInterface[cache.ObjectName]) *Controller {
	c := &Controller{
		queue:    q,
		unserved: map[cache.ObjectName]bool{},
		status:   &fakeStatus{},
	}
	c.gen.Store(&parentGen{informer: cache.NewSharedIndexInformer(&cache.ListWatch{}, &pack.Packed{}, 0, cache.Indexers{}), live: true})
	return c
}

const parentYAML = `
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata: {name: web, namespace: ns, uid: u1, resourceVersion: "1", generation: 1, labels: {a: b}}
spec: {replicas: 1}
`

// suspendedParentYAML is parentYAML suspended by its annotation.
const suspendedParentYAML = `
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata: {name: web, namespace: ns, uid: u1, resourceVersion: "1", generation: 1, annotations: {loom.dev/suspend: "true"}}
spec: {replicas: 1}
`

// configMapParentYAML is a parent of a kind without metadata.generation:
// the API server never sets it on a ConfigMap, so it stays 0.
const configMapParentYAML = `
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: ns, uid: u1, resourceVersion: "1", labels: {a: b}}
data: {replicas: "1"}
`

func TestOnUpdateEnqueuesOnlyWhatRenderReads(t *testing.T) {
	tests := []struct {
		name   string
		parent string
		change func(o *unstructured.Unstructured)
		want   bool
	}{
		{"periodic resync (same resourceVersion)", parentYAML, func(o *unstructured.Unstructured) {}, true},
		{"status only, e.g. Loom's own status write", parentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			_ = unstructured.SetNestedField(o.Object, "Ready", "status", "state")
		}, false},
		{"spec (generation)", parentYAML, func(o *unstructured.Unstructured) { o.SetResourceVersion("2"); o.SetGeneration(2) }, true},
		{"labels", parentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			o.SetLabels(map[string]string{"a": "c"})
		}, true},
		{"annotations", parentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			o.SetAnnotations(map[string]string{"x": "y"})
		}, true},
		{"loom.dev/suspend removed (loom resume): no generation change", suspendedParentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			o.SetAnnotations(nil)
		}, true},
		{"deletion", parentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			_ = unstructured.SetNestedField(o.Object, "2026-11-22T00:00:00Z", "metadata", "deletionTimestamp")
		}, true},
		{"recreated under the same name while the watch was down (new UID)", parentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			o.SetUID("u2")
		}, true},
		{"no generation: data changed", configMapParentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			_ = unstructured.SetNestedField(o.Object, "2", "data", "replicas")
		}, true},
		{"no generation: field added", configMapParentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			_ = unstructured.SetNestedField(o.Object, "eA==", "binaryData", "x")
		}, true},
		{"no generation: status only", configMapParentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			_ = unstructured.SetNestedField(o.Object, "Ready", "status", "state")
		}, false},
		{"no generation: metadata Loom does not read", configMapParentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			o.SetFinalizers([]string{"example.com/keep"})
		}, false},
		{"no generation: periodic resync", configMapParentYAML, func(o *unstructured.Unstructured) {}, true},
		{"no generation: labels", configMapParentYAML, func(o *unstructured.Unstructured) {
			o.SetResourceVersion("2")
			o.SetLabels(map[string]string{"a": "c"})
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
			defer q.ShutDown()
			c := newTestController(q)
			old := u(t, tt.parent)
			cur := old.DeepCopy()
			tt.change(cur)
			c.onUpdate(packParent(t, old), packParent(t, cur))
			if got := q.Len() == 1; got != tt.want {
				t.Errorf("enqueued = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRetryable(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"invalid object: fails the same way until something changes", apierrors.NewInvalid(schema.GroupKind{Kind: "Deployment"}, "web", nil), false},
		{"bad request", apierrors.NewBadRequest("no"), false},
		{"kind not served: retried when CRDs change", fmt.Errorf("apply: %w", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "Widget"}}), false},
		{"conflict", apierrors.NewConflict(gr, "web", errors.New("changed")), true},
		{"server timeout", apierrors.NewServerTimeout(gr, "patch", 1), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"connection refused", errors.New("dial tcp: connection refused"), true},
		{"namespace terminating: never created, whatever the retries", fmt.Errorf("apply ConfigMap ns/web: %w", namespaceTerminatingErr("ns")), false},
		{"forbidden for another cause: retried", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web", errors.New("no")), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := object.Retryable(tt.err) != nil; got != tt.want {
				t.Errorf("retryable = %v, want %v", got, tt.want)
			}
		})
	}
}

// packParent packs u as Loom's parent informers hold it: from its JSON,
// by the packer the packed client decodes parents with.
func packParent(t testing.TB, u *unstructured.Unstructured) *pack.Packed {
	t.Helper()
	return packJSON(t, u, packwatch.Parent)
}

// packChild packs u as Loom's child informers hold it.
func packChild(t testing.TB, u *unstructured.Unstructured) *pack.Packed {
	t.Helper()
	return packJSON(t, u, packwatch.Child("loom"))
}

func packJSON(t testing.TB, u *unstructured.Unstructured, pf packwatch.PackFunc) *pack.Packed {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	p, err := pf(b)
	if err != nil {
		t.Fatalf("pack %s: %v", b, err)
	}
	return p
}

// namespaceTerminatingErr is the API server's refusal of a create in a
// namespace being deleted, as the NamespaceLifecycle admission plugin
// makes it; its message is the plugin's, which Loom must not read.
func namespaceTerminatingErr(ns string) error {
	err := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web",
		fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace " + ns + " is being terminated", Field: "metadata.namespace"})
	return err
}
