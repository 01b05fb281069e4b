package apply

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/internal/fixture"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// resourceVersions are opaque: Loom may tell equal from different, never
// older from newer. After an etcd restore they go backwards, and a child
// whose watch delivered Loom's write at resourceVersion 1000 comes back at
// 500 (or at the version before Loom's write) with fields another writer
// changed: Loom must repair it, not wait for its cache to "catch up" with
// a write the world no longer holds.
func TestApplyAfterResourceVersionsWentBack(t *testing.T) {
	desired := fixture.Object(t, fixture.Deployment)
	hash, err := Hash(desired)
	if err != nil {
		t.Fatal(err)
	}
	// before is the child as the cache held it when Loom applied this
	// desired object: applied from another one, at resourceVersion 900.
	before := fixture.WithEntry(t, withHash(desired, "hash-of-the-earlier-template"), "loom", fixture.LoomFields)
	before.SetUID("u1")
	before.SetResourceVersion("900")
	restored := func(rv string, fields string) *unstructured.Unstructured {
		u := fixture.WithEntry(t, withHash(desired, hash), "loom", fields)
		u.SetUID("u1")
		u.SetResourceVersion(rv)
		return u
	}
	const lostReplicas = `{f:metadata: {f:annotations: {f:loom.dev/applied: {}}, f:labels: {f:app: {}}}, f:spec: {f:template: {}}}`
	tests := []struct {
		name string
		live *unstructured.Unstructured
		want []string // requests after the echo of Loom's write
	}{
		{"the cache holds Loom's write", restored("1000", fixture.LoomFields), nil},
		{"restored to an older snapshot where another writer took spec.replicas", restored("500", lostReplicas), []string{"apply"}},
		{"restored to the version before Loom's write", before, []string{"apply"}},
	}
	// The watch event of Loom's write can reach the Applier before the
	// write's response does (echoFirst), when Loom has no record of the
	// child yet (its first apply since it started).
	for _, echoFirst := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/echo first %v", tt.name, echoFirst), func(t *testing.T) {
				testApplyAfterRestore(t, desired, before, tt.live, tt.want, echoFirst)
			})
		}
	}
}

// testApplyAfterRestore applies desired over before (the cache's object
// when Loom writes), lets the watch deliver the write (before its response
// when echoFirst), and checks the requests that applying desired over live
// (the world as restored) sends.
func testApplyAfterRestore(t *testing.T, desired, before, live *unstructured.Unstructured, want []string, echoFirst bool) {
	ref := object.RefOf(desired)
	var a *Applier
	var got []string
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	client.PrependReactor("patch", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		got = append(got, "apply")
		var body unstructured.Unstructured
		if err := json.Unmarshal(action.(clienttesting.PatchAction).GetPatch(), &body.Object); err != nil {
			return true, nil, err
		}
		resp := fixture.WithEntry(t, &body, "loom", fixture.LoomFields)
		resp.SetUID("u1")
		resp.SetResourceVersion("1000")
		if echoFirst {
			a.Observe(ref, "1000")
		}
		return true, resp, nil
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	a = New(client, mapper, "loom")

	if r := a.Apply(t.Context(), desired.DeepCopy(), before.DeepCopy()); r.Err != nil || r.Action != object.Configured {
		t.Fatalf("first apply = %s, %v; want configured", r.Action, r.Err)
	}
	if !echoFirst {
		// Until its watch delivers the write, the cache is behind it: no
		// request.
		if r := a.Apply(t.Context(), desired.DeepCopy(), before.DeepCopy()); r.Action != object.Unchanged {
			t.Fatalf("apply with the cache behind Loom's write = %s, want unchanged", r.Action)
		}
		// The watch delivers the write (not dropped as an echo: a
		// reconcile went on with the older object).
		if a.Observe(ref, "1000") {
			t.Fatal("the echo is dropped although a reconcile used the older object")
		}
	}
	got = nil
	r := a.Apply(t.Context(), desired.DeepCopy(), live.DeepCopy())
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
