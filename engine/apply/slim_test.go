package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
	desired := uobj(t, desiredDeployment)
	hash, err := Hash(desired)
	if err != nil {
		t.Fatal(err)
	}
	applied := withEntry(t, withHash(desired, hash), "loom", loomFields)
	applied.SetUID("u1")
	applied.SetResourceVersion("5")
	// Another writer took spec.replicas: Loom's entry lost it.
	drifted := withEntry(t, applied, "loom",
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
		{"no record (after a restart): no read", false, 0, []string{DriftUnrecorded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, gets := fakeApplier(drifted, repaired)
			if tt.record {
				a.remember(RefOf(desired), record{hash: hash, uid: "u1", rv: 5, fields: Fingerprint(applied, "loom")})
			}
			r := a.Apply(t.Context(), desired, Slim(drifted.DeepCopy(), "loom"))
			if r.Err != nil || r.Action != Configured {
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
	if r := a.Apply(t.Context(), desired, Slim(applied.DeepCopy(), "loom")); r.Err != nil || len(r.Drift) != 0 {
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
