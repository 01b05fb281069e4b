package apply

import (
	"unsafe"

	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/internal/fixture"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// A repair of a child the cache holds slimmed names the fields it took
// back: it reads the whole object once, since the cache keeps only a
// fingerprint of Loom's fields. The first apply after a restart (no
// record) reads nothing and cannot name them.
func TestApplyNamesDriftOfASlimChild(t *testing.T) {
	desired := fixture.Object(t, fixture.Deployment)
	hash, err := Hash(desired)
	if err != nil {
		t.Fatal(err)
	}
	applied := fixture.WithEntry(t, withHash(desired, hash), "loom", fixture.LoomFields)
	applied.SetUID("u1")
	applied.SetResourceVersion("5")
	// Another writer took spec.replicas: Loom's entry lost it.
	drifted := fixture.WithEntry(t, applied, "loom",
		`{f:metadata: {f:annotations: {f:loom.dev/applied: {}}, f:labels: {f:app: {}}}, f:spec: {f:template: {f:spec: {f:containers: {'k:{"name":"app"}': {.: {}, f:image: {}, f:name: {}}}}}}}`)
	drifted.SetResourceVersion("6")
	repaired := applied.DeepCopy()
	repaired.SetResourceVersion("7")

	tests := []struct {
		name      string
		record    bool
		wantGets  int
		wantDrift []string
	}{
		{"record of the last apply: one read names the fields", true, 1, []string{"spec.replicas"}},
		{"no record (after a restart): no read", false, 0, []string{object.DriftUnrecorded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, gets := fakeApplier(drifted, repaired)
			if tt.record {
				a.remember(object.RefOf(desired), newRecord(hash, "u1", "5", "4", pack.Fingerprint(applied, "loom")))
			}
			r := a.Apply(t.Context(), desired, pack.Slim(drifted.DeepCopy(), "loom"))
			if r.Err != nil || r.Action != object.Configured {
				t.Fatalf("Apply = %s, %v; want configured", r.Action, r.Err)
			}
			if *gets != tt.wantGets {
				t.Errorf("%d reads, want %d", *gets, tt.wantGets)
			}
			if diff := cmp.Diff(tt.wantDrift, r.Drift); diff != "" {
				t.Errorf("Drift (-want +got):\n%s", diff)
			}
		})
	}
	// An apply that changed nothing Loom owns is no drift, and reads nothing.
	a, _ := fakeApplier(applied, applied)
	if r := a.Apply(t.Context(), desired, pack.Slim(applied.DeepCopy(), "loom")); r.Err != nil || len(r.Drift) != 0 {
		t.Errorf("restart re-apply of an unchanged child: %v, drift %v", r.Err, r.Drift)
	}
}

// fakeApplier returns an Applier whose client answers every GET of a
// Deployment with get and every apply with patched, and counts the GETs.
func fakeApplier(get, patched *unstructured.Unstructured) (*Applier, *int) {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	gets := 0
	client.PrependReactor("get", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		gets++
		return true, get.DeepCopy(), nil
	})
	client.PrependReactor("patch", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, patched.DeepCopy(), nil
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	return New(client, mapper, "loom"), &gets
}

// A rendered object's strings share the memory of the whole document they
// were decoded from. The record Loom keeps of each child for as long as
// the child lives must not keep that document alive: at 10 000 parents,
// records that did held 19.5 MiB of rendered documents.
func TestRecordDoesNotPinTheRenderedObject(t *testing.T) {
	desired := fixture.Object(t, fixture.Deployment)
	applied := fixture.WithEntry(t, desired, "loom", fixture.LoomFields)
	applied.SetUID("u1")
	applied.SetResourceVersion("5")
	shares := func(a, b string) bool { return len(a) > 0 && unsafe.StringData(a) == unsafe.StringData(b) }
	checkKeys := func(t *testing.T, a *Applier, desired *unstructured.Unstructured) {
		t.Helper()
		if len(a.applied) != 1 {
			t.Fatalf("%d records, want 1", len(a.applied))
		}
		for key := range a.applied {
			if shares(key.name, desired.GetName()) {
				t.Errorf("the record's key %v shares memory with the rendered object's strings", key)
			}
		}
	}
	t.Run("applied", func(t *testing.T) {
		a, _ := fakeApplier(applied, applied)
		if r := a.Apply(t.Context(), desired, nil); r.Err != nil {
			t.Fatal(r.Err)
		}
		checkKeys(t, a, desired)
	})
	// The record is marked stale, a map assignment, when the cache has
	// not caught up with the write yet.
	t.Run("marked stale", func(t *testing.T) {
		a, _ := fakeApplier(applied, applied)
		if r := a.Apply(t.Context(), desired, nil); r.Err != nil {
			t.Fatal(r.Err)
		}
		again := fixture.Object(t, fixture.Deployment) // strings of its own, like the next render's
		if r := a.Apply(t.Context(), again, nil); r.Action != object.Unchanged {
			t.Fatalf("second apply: %s, want unchanged", r.Action)
		}
		checkKeys(t, a, again)
	})
}
