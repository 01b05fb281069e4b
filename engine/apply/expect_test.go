package apply

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/internal/fixture"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/openapitest"
	clienttesting "k8s.io/client-go/testing"
)

// schemas serves the OpenAPI v3 documents of a real API server: client-go's
// copies of core/v1 and apps/v1, and, in testdata, the schema the local
// cluster's API server (v1.36) publishes for the CRD of
// test/e2e/testdata/restart/sprocket-crd.yaml.
type schemas []openapi.Client

func (s schemas) Paths() (map[string]openapi.GroupVersion, error) {
	out := map[string]openapi.GroupVersion{}
	for _, c := range s {
		p, err := c.Paths()
		if err != nil {
			return nil, err
		}
		maps.Copy(out, p)
	}
	return out, nil
}

func testSchemas() openapi.Client {
	return schemas{openapitest.NewEmbeddedFileClient(), openapitest.NewFileClient("testdata/openapi")}
}

// The children below, and the managedFields entry the local cluster's API
// server (v1.36) gave each when applied with `kubectl apply --server-side
// --field-manager loom`: its fieldsV1, verbatim.
var serverEntries = []struct {
	name, obj, apiVersion, fieldsV1 string
}{
	{"Deployment: containers, ports without a protocol, env, volumes, an atomic list (args)", `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, app.kubernetes.io/managed-by: loom}
  annotations: {loom.dev/applied: h1}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        ports: [{containerPort: 8080, name: http}, {containerPort: 9090}]
        env: [{name: A, value: "1"}]
        resources: {requests: {memory: 64Mi}}
      - name: sidecar
        image: busybox
        args: [sleep, "3600"]
        ports: [{containerPort: 9100, protocol: UDP}]
      volumes: [{name: scratch, emptyDir: {}}]
`, "apps/v1", `{"f:metadata": {"f:annotations": {"f:loom.dev/applied": {}}, "f:labels": {"f:app": {}, "f:app.kubernetes.io/managed-by": {}}}, "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}}, "f:image": {}, "f:name": {}, "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}}, "k:{\"containerPort\":9090,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}, "f:resources": {"f:requests": {"f:memory": {}}}}, "k:{\"name\":\"sidecar\"}": {".": {}, "f:args": {}, "f:image": {}, "f:name": {}, "f:ports": {"k:{\"containerPort\":9100,\"protocol\":\"UDP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}}}}, "f:volumes": {"k:{\"name\":\"scratch\"}": {".": {}, "f:emptyDir": {}, "f:name": {}}}}}}}`},
	{"ConfigMap", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  labels: {app: web}
  annotations: {loom.dev/applied: h2}
data: {a: "1", b.txt: "hello"}
`, "v1", `{"f:data": {"f:a": {}, "f:b.txt": {}}, "f:metadata": {"f:annotations": {"f:loom.dev/applied": {}}, "f:labels": {"f:app": {}}}}`},
	{"Service: ports keyed by port and protocol, one defaulted", `
apiVersion: v1
kind: Service
metadata:
  name: web
  annotations: {loom.dev/applied: h3}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}, {name: dns, port: 53, protocol: UDP}]
`, "v1", `{"f:metadata": {"f:annotations": {"f:loom.dev/applied": {}}}, "f:spec": {"f:ports": {"k:{\"port\":53,\"protocol\":\"UDP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}, "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:targetPort": {}}}, "f:selector": {}}}`},
	{"Secret", `
apiVersion: v1
kind: Secret
metadata:
  name: web-secret
  annotations: {loom.dev/applied: h4}
type: Opaque
data: {password: czNjcmV0}
`, "v1", `{"f:data": {"f:password": {}}, "f:metadata": {"f:annotations": {"f:loom.dev/applied": {}}}, "f:type": {}}`},
	{"CR: a map list with a defaulted key, a set list, preserve-unknown-fields", `
apiVersion: restart.e2e.loom.dev/v1
kind: Sprocket
metadata:
  name: web
  annotations: {loom.dev/applied: h5}
spec:
  size: 3
  ports: [{port: 80}, {port: 53, protocol: UDP, name: dns}]
  tags: [a, b]
  extra: {free: {form: [1, 2]}, list: [{x: 1}]}
`, "restart.e2e.loom.dev/v1", `{"f:metadata": {"f:annotations": {"f:loom.dev/applied": {}}}, "f:spec": {"f:extra": {"f:free": {".": {}, "f:form": {}}, "f:list": {}}, "f:ports": {"k:{\"port\":53,\"protocol\":\"UDP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}, "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}, "f:size": {}, "f:tags": {"v:\"a\"": {}, "v:\"b\"": {}}}}`},
}

// asServed returns obj as the API server serves it after Loom's apply:
// with a UID, a resourceVersion and managedFields holding Loom's entry
// (fieldsV1 at apiVersion) after another manager's.
func asServed(t *testing.T, obj *unstructured.Unstructured, apiVersion, fieldsV1 string) *unstructured.Unstructured {
	t.Helper()
	var fields any
	if err := json.Unmarshal([]byte(fieldsV1), &fields); err != nil {
		t.Fatal(err)
	}
	out := obj.DeepCopy()
	out.SetUID("u1")
	out.SetResourceVersion("7")
	out.SetNamespace("ns")
	md := out.Object["metadata"].(map[string]any)
	md["managedFields"] = []any{
		map[string]any{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": apiVersion,
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{"f:x": map[string]any{}}}}},
		map[string]any{"manager": "loom", "operation": "Apply", "apiVersion": apiVersion, "time": "2026-01-01T00:00:00Z",
			"fieldsType": "FieldsV1", "fieldsV1": fields},
	}
	return out
}

// The entry Loom's apply gives a child is computed from the object and
// the type's schema exactly as the API server computes it: the same
// fieldsV1, key by key (a list key the object leaves out comes from the
// schema's default, as the server's does), and so the same fingerprint as
// the one the child cache takes of the served object.
func TestExpectedEntryIsTheServers(t *testing.T) {
	x := newExpecter(testSchemas())
	for _, tt := range serverEntries {
		t.Run(tt.name, func(t *testing.T) {
			sent := fixture.Object(t, tt.obj)
			got, err := x.applied(sent.DeepCopy(), "loom")
			if err != nil {
				t.Fatal(err)
			}
			e := pack.OwnEntry(got, "loom")
			if e == nil {
				t.Fatalf("no entry of loom in %v", got.Object["metadata"])
			}
			var want any
			if err := json.Unmarshal([]byte(tt.fieldsV1), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, e["fieldsV1"]); diff != "" {
				t.Errorf("fieldsV1 (-server +computed):\n%s", diff)
			}
			if e["apiVersion"] != tt.apiVersion {
				t.Errorf("apiVersion = %v, want %s", e["apiVersion"], tt.apiVersion)
			}
			fp, err := x.fingerprint(sent.DeepCopy(), "loom")
			if err != nil {
				t.Fatal(err)
			}
			served := asServed(t, sent, tt.apiVersion, tt.fieldsV1)
			if want := pack.Fingerprint(pack.Slim(served, "loom"), "loom"); fp != want {
				t.Errorf("fingerprint = %s, the cache's of the served object = %s", fp, want)
			}
		})
	}
}

// What cannot be computed for sure is not computed: the caller then
// applies, as it did with no way to compute.
func TestExpectedEntryRefusesWhatItCannotKnow(t *testing.T) {
	x := newExpecter(testSchemas())
	tests := []struct{ name, obj string }{
		{"an object that sets status (reset by the server, not by the schema)",
			`{apiVersion: apps/v1, kind: Deployment, metadata: {name: a}, spec: {replicas: 1}, status: {replicas: 1}}`},
		{"a group-version the server publishes no schema of",
			`{apiVersion: nowhere.loom.dev/v1, kind: Thing, metadata: {name: a}, spec: {a: 1}}`},
		{"a kind its group-version's schema does not have",
			`{apiVersion: v1, kind: Gizmo, metadata: {name: a}}`},
		{"a field the schema does not declare",
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {a: "1"}, extra: 1}`},
		{"a map list with one key twice (the server refuses it too)",
			`{apiVersion: v1, kind: Service, metadata: {name: a}, spec: {ports: [{port: 80, name: a}, {port: 80, name: b}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if fp, err := x.fingerprint(fixture.Object(t, tt.obj), "loom"); err == nil {
				t.Errorf("fingerprint = %q, want an error", fp)
			}
		})
	}
	if _, err := x.fingerprint(fixture.Object(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a}, status: {}}`), "loom"); !errors.Is(err, errHasStatus) {
		t.Errorf("err = %v, want errHasStatus", err)
	}
}

// A new Applier (a new process: no record of any apply) sends no request
// for a child that is exactly what Loom's apply of the desired object
// leaves, and applies every other one: a field another writer took from
// Loom's entry, another hash, a child being deleted, a child whose schema
// it cannot read. On the old code every one of them was applied.
func TestNewApplierProvesUnchangedFromTheLiveEntry(t *testing.T) {
	type variant struct {
		name  string
		edit  func(u *unstructured.Unstructured)
		apply bool
	}
	variants := []variant{
		{"as Loom's apply left it", nil, false},
		{"another writer took a field from Loom's entry", func(u *unstructured.Unstructured) {
			mf := u.Object["metadata"].(map[string]any)["managedFields"].([]any)
			loom := mf[1].(map[string]any)
			fields := loom["fieldsV1"].(map[string]any)
			md := fields["f:metadata"].(map[string]any)
			delete(md["f:annotations"].(map[string]any), "f:loom.dev/applied")
			delete(md, "f:annotations")
		}, true},
		{"applied from another desired object", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{AnnotationApplied: "earlier"})
		}, true},
		{"being deleted", func(u *unstructured.Unstructured) {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}, true},
		{"Loom's entry at another version", func(u *unstructured.Unstructured) {
			mf := u.Object["metadata"].(map[string]any)["managedFields"].([]any)
			mf[1].(map[string]any)["apiVersion"] = "v9"
		}, true},
	}
	for _, tt := range serverEntries {
		for _, v := range variants {
			t.Run(tt.name+"/"+v.name, func(t *testing.T) {
				desired := fixture.Object(t, tt.obj)
				desired.SetNamespace("ns")
				desired.SetAnnotations(nil)
				hash, err := Hash(desired)
				if err != nil {
					t.Fatal(err)
				}
				live := asServed(t, withHash(desired, hash), tt.apiVersion, tt.fieldsV1)
				if v.edit != nil {
					v.edit(live)
				}
				a, got := recordingServer(t, desired.GroupVersionKind())
				r := a.Apply(t.Context(), desired, pack.Slim(live, "loom"))
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				want, wantAction := []string{}, object.Unchanged
				if v.apply {
					want, wantAction = []string{"patch"}, object.Configured
				}
				if r.Action != wantAction {
					t.Errorf("action = %s, want %s", r.Action, wantAction)
				}
				if diff := cmp.Diff(want, *got); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
				// Proven once, the child is recorded: the next check is
				// the record's own.
				if !v.apply && a.Len() != 1 {
					t.Errorf("records = %d, want 1", a.Len())
				}
			})
		}
	}
}

// recordingServer returns a new Applier, with the test schemas, whose fake
// API server records the verb of each request it gets and answers an
// apply with the object sent.
func recordingServer(t *testing.T, gvk schema.GroupVersionKind) (*Applier, *[]string) {
	t.Helper()
	got := &[]string{}
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	client.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		*got = append(*got, a.GetVerb())
		if p, ok := a.(clienttesting.PatchAction); ok {
			var body unstructured.Unstructured
			if err := json.Unmarshal(p.GetPatch(), &body.Object); err != nil {
				return true, nil, err
			}
			return true, &body, nil
		}
		return true, nil, errors.New("unexpected request")
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	return New(client, mapper, "loom", WithOpenAPI(testSchemas())), got
}

// A replica that applied a child from an earlier desired object, and then
// lost its parent to another replica that applied the current one, sends
// nothing when it takes the parent back: its record is of another desired
// object, and says nothing about this one, so the live entry decides.
func TestARecordOfAnotherDesiredObjectDoesNotForceAnApply(t *testing.T) {
	tt := serverEntries[1] // the ConfigMap
	desired := fixture.Object(t, tt.obj)
	desired.SetNamespace("ns")
	desired.SetAnnotations(nil)
	hash, err := Hash(desired)
	if err != nil {
		t.Fatal(err)
	}
	live := asServed(t, withHash(desired, hash), tt.apiVersion, tt.fieldsV1)
	a, got := recordingServer(t, desired.GroupVersionKind())
	ref := object.RefOf(desired)
	a.remember(ref, newRecord("hash-of-the-earlier-template", "u1", "5", "4", "fields-of-the-earlier-template"))
	a.Observe(ref, "5")
	r := a.Apply(t.Context(), desired, pack.Slim(live, "loom"))
	if r.Err != nil || r.Action != object.Unchanged {
		t.Errorf("Apply = %s (err %v), want unchanged", r.Action, r.Err)
	}
	if diff := cmp.Diff([]string{}, *got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// Workers decide children of several group-versions at once with one
// Applier (run with -race): each group-version's schema is read once, and
// every child is proven unchanged.
func TestProofsRunConcurrently(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	client.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("unexpected request")
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	type child struct{ desired, live *unstructured.Unstructured }
	var children []child
	for _, tt := range serverEntries {
		desired := fixture.Object(t, tt.obj)
		desired.SetNamespace("ns")
		desired.SetAnnotations(nil)
		mapper.Add(desired.GroupVersionKind(), meta.RESTScopeNamespace)
		hash, err := Hash(desired)
		if err != nil {
			t.Fatal(err)
		}
		children = append(children, child{desired, pack.Slim(asServed(t, withHash(desired, hash), tt.apiVersion, tt.fieldsV1), "loom")})
	}
	a := New(client, mapper, "loom", WithOpenAPI(testSchemas()))
	var wg sync.WaitGroup
	results := make(chan object.Result, 8*len(children))
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range children {
				c := children[(i+w)%len(children)]
				results <- a.Apply(context.Background(), c.desired.DeepCopy(), c.live)
			}
		}()
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.Err != nil || r.Action != object.Unchanged {
			t.Errorf("%s: %s (err %v), want unchanged", r.Ref, r.Action, r.Err)
		}
	}
}
