package pack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/internal/fixture"
)

func TestFingerprint(t *testing.T) {
	base := fixture.Object(t, fixture.Deployment)
	fp := func(fields string) string { return Fingerprint(fixture.WithEntry(t, base, "loom", fields), "loom") }
	if fp("") != "" {
		t.Error("no entry should give an empty fingerprint")
	}
	if fp(fixture.LoomFields) != fp(fixture.LoomFields) {
		t.Error("equal entries gave different fingerprints")
	}
	// The timestamp and other managers' entries do not count.
	moved := fixture.WithEntry(t, base, "loom", fixture.LoomFields)
	entries := moved.Object["metadata"].(map[string]any)["managedFields"].([]any)
	entries[1].(map[string]any)["time"] = "2027-01-01T00:00:00Z"
	entries[0].(map[string]any)["fieldsV1"] = fixture.Map(t, `{f:status: {f:observedGeneration: {}}}`)
	if Fingerprint(moved, "loom") != fp(fixture.LoomFields) {
		t.Error("the fingerprint depends on the time or on another manager's entry")
	}
	if fp(`{f:spec: {f:replicas: {}}}`) == fp(`{f:spec: {f:paused: {}}}`) {
		t.Error("different field sets gave one fingerprint")
	}
	if Fingerprint(fixture.WithEntry(t, base, "other", fixture.LoomFields), "loom") != "" {
		t.Error("another manager's apply entry was taken for Loom's")
	}
}

// Slim keeps what Loom's decisions read, and nothing of what Loom applied
// that it knows from its templates.
func TestSlim(t *testing.T) {
	full := fixture.WithEntry(t, fixture.Object(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  uid: u1
  resourceVersion: "7"
  generation: 3
  creationTimestamp: "2026-01-01T00:00:00Z"
  deletionTimestamp: "2026-01-02T00:00:00Z"
  labels: {app: web, applyset.kubernetes.io/part-of: applyset-x-v1}
  annotations:
    loom.dev/applied: abc
    loom.dev/adopt: MyResource.example.loom.dev/web
    kubectl.kubernetes.io/last-applied-configuration: '{"a huge": "copy"}'
    deployment.kubernetes.io/revision: "2"
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true}]
  finalizers: [x]
spec:
  replicas: 2
  progressDeadlineSeconds: 600
  strategy: {type: RollingUpdate}
  selector: {matchLabels: {app: web}}
  template: {spec: {containers: [{name: app, image: nginx}]}}
status:
  observedGeneration: 3
  conditions: [{type: Available, status: "True"}]
`), "loom", fixture.LoomFields)
	want := fixture.Object(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  uid: u1
  resourceVersion: "7"
  generation: 3
  deletionTimestamp: "2026-01-02T00:00:00Z"
  labels: {app: web, applyset.kubernetes.io/part-of: applyset-x-v1}
  annotations: {loom.dev/applied: abc, loom.dev/adopt: MyResource.example.loom.dev/web}
  ownerReferences: [{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: p1, controller: true}]
spec: {replicas: 2, progressDeadlineSeconds: 600}
status:
  observedGeneration: 3
  conditions: [{type: Available, status: "True"}]
`)
	want.Object[fieldsKey] = Fingerprint(full, "loom")
	got := Slim(full.DeepCopy(), "loom")
	if diff := cmp.Diff(want.Object, got.Object); diff != "" {
		t.Errorf("Slim (-want +got):\n%s", diff)
	}
	if Fingerprint(got, "loom") == "" || Fingerprint(got, "loom") != Fingerprint(full, "loom") {
		t.Errorf("fingerprint of the slim object %q, of the whole one %q", Fingerprint(got, "loom"), Fingerprint(full, "loom"))
	}
	if again := Slim(got, "loom"); !cmp.Equal(again.Object, got.Object) {
		t.Errorf("Slim of a slim object changed it: %v", again.Object)
	}
	// No entry of Loom's: the fingerprint is empty, and stays so.
	none := Slim(fixture.WithEntry(t, fixture.Object(t, fixture.Deployment), "loom", ""), "loom")
	if fp, ok := none.Object[fieldsKey]; !ok || fp != "" || Fingerprint(none, "loom") != "" {
		t.Errorf("no entry: fingerprint %v (kept %v)", fp, ok)
	}
}
