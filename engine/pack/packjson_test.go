package pack

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// packJSONCases are objects as the API server's JSON has them, and odd
// ones it does not send, which the JSON packers must still pack as the
// unstructured path does.
var packJSONCases = []struct{ name, obj string }{
	{"service", `
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: team-a
  uid: u1
  resourceVersion: "5"
  labels: {a: b}
  annotations: {loom.dev/applied: x, other: y}
  ownerReferences: [{apiVersion: example.com/v1, kind: MyResource, name: web, uid: p1, controller: true, blockOwnerDeletion: true}]
  managedFields:
  - {manager: loom, operation: Apply, apiVersion: v1, time: "2026-11-24T10:00:00Z", fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:ports": {}, "f:type": {}}}}
spec: {type: ClusterIP, clusterIP: 10.0.0.1, clusterIPs: [10.0.0.1], ports: [{port: 80, targetPort: 8080}]}
status: {loadBalancer: {}}
`},
	{"configmap of another manager, two owners, blockOwnerDeletion false", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: ns
  uid: u3
  resourceVersion: "7"
  ownerReferences:
  - {apiVersion: example.com/v1, kind: Other, name: x, uid: o1}
  - {apiVersion: example.com/v1, kind: MyResource, name: web, uid: p1, controller: true, blockOwnerDeletion: false}
  managedFields:
  - {manager: kubectl, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {}}}
  - {manager: loom, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {}}}
data: {a: "1"}
`},
	{"being deleted, generation 0, no status", `
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: ns, uid: u4, resourceVersion: "9", generation: 0, deletionTimestamp: "2026-11-24T10:00:00Z", finalizers: [x]}
spec: {parallelism: 2, completions: 3, template: {spec: {containers: [{name: a, image: b}]}}}
`},
	{"a watch bookmark", `
apiVersion: apps/v1
kind: Deployment
metadata: {resourceVersion: "12", creationTimestamp: null, annotations: {k8s.io/initial-events-end: "true"}}
spec: {selector: null, template: {metadata: {creationTimestamp: null}, spec: {containers: null}}, strategy: {}}
status: {}
`},
	{"null metadata, annotations, spec and status", `
apiVersion: example.com/v1
kind: MyResource
metadata: null
spec: null
status: null
`},
	{"null annotations, empty labels, last-applied only", `
apiVersion: example.com/v1
kind: MyResource
metadata:
  name: p
  namespace: ns
  uid: p1
  resourceVersion: "3"
  generation: 4
  labels: {}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}
spec: {image: "nginx:1.27", replicas: 1, ratio: 1.5, big: 9007199254740993, config: {a: "1"}}
status: {observedGeneration: 4, state: Ready, children: [{kind: Deployment, name: web, ready: true}]}
`},
	{"one controller with blockOwnerDeletion false, not lifted", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: ns
  uid: u6
  resourceVersion: "7"
  ownerReferences: [{apiVersion: example.com/v1, kind: MyResource, name: web, uid: p1, controller: true, blockOwnerDeletion: false}]
`},
	{"one controller without blockOwnerDeletion, lifted", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: ns
  uid: u7
  resourceVersion: "7"
  ownerReferences: [{apiVersion: example.com/v1, kind: MyResource, name: web, uid: p1, controller: true}]
`},
	{"owners the fast path does not read: an extra field, a missing name, a string for a bool", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: ns
  uid: u8
  resourceVersion: "7"
  ownerReferences: [{apiVersion: example.com/v1, kind: MyResource, name: web, uid: p1, controller: true, extra: 1}]
`},
	{"owner without a name", `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns, uid: u9, resourceVersion: "7", ownerReferences: [{apiVersion: v1, kind: X, uid: p1, controller: true}]}
`},
	{"owner with a string for controller, and no controller", `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns, uid: u10, resourceVersion: "7", ownerReferences: [{apiVersion: v1, kind: X, name: x, uid: p1, controller: "true"}]}
`},
	{"managedFields keys to sort and escape", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: ns
  uid: u11
  resourceVersion: "7"
  managedFields:
  - {manager: loom, operation: Apply, subresource: status, fieldsV1: {"f:status": {}}}
  - {manager: loom, operation: Apply, apiVersion: v1, fieldsV1: {"f:data": {"f:z": {}, "f:a&b": {}, "f:é": {}, "f:<x>": {}, "f:a": {}}, ".": {}, "f:metadata": {"f:labels": {"f:b": {}, "f:a": {}}}}}
`},
	{"annotations null", `
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: ns, uid: u5, resourceVersion: "1", annotations: null}
type: Opaque
`},
}

func packJSONObjects(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, c := range packJSONCases {
		b, err := yaml.YAMLToJSON([]byte(c.obj))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		out[c.name] = b
	}
	b, err := os.ReadFile("testdata/deployment.json")
	if err != nil {
		t.Fatal(err)
	}
	out["deployment as the API server sends it"] = b
	return out
}

func decodeUnstructured(t testing.TB, b []byte) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}

// SlimJSON and StripJSON pack an object's JSON into what the informers'
// unstructured path (decode, Slim or Strip, Pack) packs: the same object,
// the same typed metadata, the same controller and fingerprint.
func TestPackJSONIsPackOfDecoded(t *testing.T) {
	for name, b := range packJSONObjects(t) {
		t.Run(name, func(t *testing.T) {
			for _, mode := range []struct {
				name string
				old  func(u *unstructured.Unstructured) *unstructured.Unstructured
				new  func([]byte) (*Packed, error)
			}{
				{"slim", func(u *unstructured.Unstructured) *unstructured.Unstructured { return Slim(u, "loom") },
					func(b []byte) (*Packed, error) { return SlimJSON(b, "loom") }},
				{"strip", Strip, StripJSON},
			} {
				want, err := Pack(mode.old(decodeUnstructured(t, b)))
				if err != nil {
					t.Fatal(err)
				}
				got, err := mode.new(b)
				if err != nil {
					t.Fatalf("%s: %v", mode.name, err)
				}
				wantObj, _ := want.Object()
				gotObj, err := got.Object()
				if err != nil {
					t.Fatalf("%s: %v", mode.name, err)
				}
				if d := cmp.Diff(wantObj.Object, gotObj.Object); d != "" {
					t.Errorf("%s: Object() differs (-unstructured path +JSON path):\n%s", mode.name, d)
				}
				if d := cmp.Diff(want.GetObjectMeta(), got.GetObjectMeta()); d != "" {
					t.Errorf("%s: typed metadata differs:\n%s", mode.name, d)
				}
				if d := cmp.Diff(want.Controller(), got.Controller()); d != "" {
					t.Errorf("%s: controller differs:\n%s", mode.name, d)
				}
				if cap(got.raw) != len(got.raw) {
					t.Errorf("%s: the packed JSON keeps %d bytes for %d: a cache would hold the spare capacity", mode.name, cap(got.raw), len(got.raw))
				}
				if got.GetAPIVersion() != want.GetAPIVersion() || got.GetKind() != want.GetKind() || got.owner.lifted != want.owner.lifted {
					t.Errorf("%s: %s %s lifted=%v, want %s %s lifted=%v", mode.name, got.GetAPIVersion(), got.GetKind(),
						got.owner.lifted, want.GetAPIVersion(), want.GetKind(), want.owner.lifted)
				}
			}
		})
	}
}

// The fingerprint is manager's Apply entry's, not its status entry's nor
// another manager's, and the same on both paths.
func TestFingerprintJSON(t *testing.T) {
	b, err := os.ReadFile("testdata/deployment.json")
	if err != nil {
		t.Fatal(err)
	}
	u := decodeUnstructured(t, b)
	for _, manager := range []string{"loom", "kube-controller-manager", "nobody"} {
		p, err := SlimJSON(b, manager)
		if err != nil {
			t.Fatal(err)
		}
		obj, _ := p.Object()
		got, want := Fingerprint(obj, manager), Fingerprint(u, manager)
		if got != want {
			t.Errorf("%s: fingerprint %q, want %q", manager, got, want)
		}
		if (manager == "loom") != (got != "") {
			t.Errorf("%s: fingerprint %q", manager, got)
		}
	}
}

// canonicalFields writes what json.Marshal writes for the decoded tree, or
// says it cannot.
func TestCanonicalFields(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"f:b":{},"f:a":{".":{},"k:{\"name\":\"app\"}":{}}}`,
		`{"f:a&b":{},"f:<x>":{},"f:\u00e8":{},"f:é":{}, "f:\u2028":{}}`,
		`{"f:\u00e9":{}}`,
		` { "f:z" : { } , "f:a" : {} } `,
	} {
		var v any
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(v)
		got, ok := canonicalFields([]byte(in), nil)
		if !ok || string(got) != string(want) {
			t.Errorf("canonicalFields(%s) = %s, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{`{"f:a":1}`, `{"f:a":{},"f:a":{}}`, `{"f:\u00e9":{},"f:é":{}}`, `[]`, `null`, `{"f:a":[{}]}`, `{"f:a":{}`} {
		if got, ok := canonicalFields([]byte(in), nil); ok {
			t.Errorf("canonicalFields(%s) = %s, true; want false", in, got)
		}
	}
}

func TestPackJSONRefusesWhatIsNotAnObject(t *testing.T) {
	for _, in := range []string{`[1]`, `{"kind":`, `"x"`} {
		if _, err := SlimJSON([]byte(in), "loom"); err == nil {
			t.Errorf("SlimJSON(%s): no error", in)
		}
		if _, err := StripJSON([]byte(in)); err == nil {
			t.Errorf("StripJSON(%s): no error", in)
		}
	}
}

// BenchmarkPackWatchEvent is what a child's watch event costs the
// informer: the unstructured path (decode into maps, Slim, Pack) against
// SlimJSON. Compare the two in one run: go test -bench PackWatchEvent.
func BenchmarkPackWatchEvent(b *testing.B) {
	data, err := os.ReadFile("testdata/deployment.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("unstructured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
			if _, err := Pack(Slim(u, "loom")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := SlimJSON(data, "loom"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzPackJSON: whatever the unstructured path packs, the JSON packers
// pack to the same object; and no input makes them panic. Input that the
// unstructured decoder refuses is checked for panics only: the packers
// may accept some malformed JSON, which never reaches them (see the doc
// of this package and TestPackedWatchStreamRefusesAMalformedFrame).
func FuzzPackJSON(f *testing.F) {
	for _, b := range packJSONObjects(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		slim, slimErr := SlimJSON(b, "loom")
		strip, stripErr := StripJSON(b)
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON(b) != nil {
			return
		}
		for _, c := range []struct {
			name string
			old  *unstructured.Unstructured
			got  *Packed
			err  error
		}{
			{"slim", Slim(u.DeepCopy(), "loom"), slim, slimErr},
			{"strip", Strip(u.DeepCopy()), strip, stripErr},
		} {
			want, err := Pack(c.old)
			if err != nil {
				return
			}
			if c.err != nil {
				t.Fatalf("%s: %v on an object the unstructured path packs", c.name, c.err)
			}
			wantObj, _ := want.Object()
			gotObj, err := c.got.Object()
			if err != nil {
				t.Fatalf("%s: Object: %v", c.name, err)
			}
			// Pack writes an integral float (80.0) as 80, which decodes as
			// an int64, while the JSON packers keep the number as sent. The
			// API server never sends 80.0, so compare numbers written.
			if d := cmp.Diff(roundTrip(t, wantObj.Object), roundTrip(t, gotObj.Object)); d != "" {
				t.Fatalf("%s: differs:\n%s", c.name, d)
			}
			if d := cmp.Diff(want.GetObjectMeta(), c.got.GetObjectMeta()); d != "" {
				t.Fatalf("%s: typed metadata differs:\n%s", c.name, d)
			}
		}
	})
}

func roundTrip(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// JSONKind reads an object's kind and stops, leaving the rest to the
// packer; it reads a list to its items.
func TestJSONKind(t *testing.T) {
	tests := []struct {
		in               string
		apiVersion, kind string
		items            bool
	}{
		// Cut short after the kind: an object is not scanned past it.
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":`, "v1", "ConfigMap", false},
		{`{"kind":"Status","apiVersion":"v1","code":410}`, "v1", "Status", false},
		{`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}`, "v1", "ConfigMapList", true},
		{`{"items":[],"apiVersion":"v1","kind":"ConfigMapList"}`, "v1", "ConfigMapList", true},
	}
	for _, tt := range tests {
		av, k, items, err := JSONKind([]byte(tt.in))
		if err != nil || av != tt.apiVersion || k != tt.kind || items != tt.items {
			t.Errorf("JSONKind(%s) = %q %q %v, %v; want %q %q %v", tt.in, av, k, items, err, tt.apiVersion, tt.kind, tt.items)
		}
	}
	if _, _, _, err := JSONKind([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","items":[`)); err == nil {
		t.Error("a list cut short: no error")
	}
}
