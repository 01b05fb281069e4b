package apply

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/internal/fixture"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// driftDeployment renders a Deployment with the given drift annotations.
func driftDeployment(t *testing.T, image string, ann map[string]string) *unstructured.Unstructured {
	t.Helper()
	u := fixture.Object(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  labels: {app: web}
  annotations: {note: loom}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: nginx}]
`)
	a := u.GetAnnotations()
	for k, v := range ann {
		a[k] = v
	}
	u.SetAnnotations(a)
	c := u.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	c["image"] = image
	return u
}

// servedFrom is what the API server holds after Loom's apply of desired:
// desired with its hash, a UID, a resourceVersion and Loom's entry as the
// server computes it.
func servedFrom(t *testing.T, desired *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	hash, err := Hash(desired)
	if err != nil {
		t.Fatal(err)
	}
	out, err := newExpecter(testSchemas()).applied(withHash(desired, hash), "loom")
	if err != nil {
		t.Fatal(err)
	}
	out.SetUID("u1")
	out.SetResourceVersion("7")
	return out
}

// takenBy is live after another writer's Update set value at path: Loom's
// entry loses the field.
func takenBy(t *testing.T, live *unstructured.Unstructured, value any, path ...string) *unstructured.Unstructured {
	t.Helper()
	out := live.DeepCopy()
	if value == nil {
		unstructured.RemoveNestedField(out.Object, path...)
	} else if err := unstructured.SetNestedField(out.Object, value, path...); err != nil {
		t.Fatal(err)
	}
	e := pack.OwnEntry(out, "loom")
	fields := e["fieldsV1"].(map[string]any)
	for _, p := range path[:len(path)-1] {
		fields = fields["f:"+p].(map[string]any)
	}
	delete(fields, "f:"+path[len(path)-1])
	out.SetResourceVersion("8")
	return out
}

// driftServer returns an Applier with the test schemas whose fake API
// server answers a GET with *live and an apply with the object sent, and
// records each request's verb and each applied object.
func driftServer(t *testing.T, live **unstructured.Unstructured) (*Applier, *[]string, *[]*unstructured.Unstructured) {
	t.Helper()
	verbs, sent := &[]string{}, &[]*unstructured.Unstructured{}
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	client.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		*verbs = append(*verbs, a.GetVerb())
		switch a := a.(type) {
		case clienttesting.PatchAction: // before GetAction, which it also is
			var body unstructured.Unstructured
			if err := json.Unmarshal(a.GetPatch(), &body.Object); err != nil {
				return true, nil, err
			}
			*sent = append(*sent, &body)
			// The server's answer: what the apply makes of an object
			// with no fields, Loom's entry included.
			resp, err := newExpecter(testSchemas()).applied(body.DeepCopy(), "loom")
			if err != nil {
				return true, nil, err
			}
			resp.SetUID("u1")
			resp.SetResourceVersion("9")
			return true, resp, nil
		case clienttesting.GetAction:
			return true, (*live).DeepCopy(), nil
		}
		return true, nil, errors.New("unexpected request")
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(driftDeployment(t, "x", nil).GroupVersionKind(), meta.RESTScopeNamespace)
	return New(client, mapper, "loom", WithOpenAPI(testSchemas())), verbs, sent
}

// Each drift mode, against a Deployment whose spec.replicas another writer
// took (or set back): warn leaves it, names it and reads the child once
// per change; ignore leaves it and sends nothing; a new desired object is
// applied, without an ignored field Loom lost; repair takes it back. On the
// old code every drifted case was a forced apply that took the field back.
func TestDriftModes(t *testing.T) {
	warn := map[string]string{object.AnnotationDrift: object.DriftWarn}
	ignore := map[string]string{object.AnnotationDriftIgnore: "spec.replicas, metadata.annotations.note"}
	tests := []struct {
		name string
		ann  map[string]string
		// edit is the other writer's change of what Loom applied.
		edit func(t *testing.T, live *unstructured.Unstructured) *unstructured.Unstructured
		// image is the new desired object's ("" for the same one).
		image       string
		wantAction  object.Action
		wantDrifted []string
		wantDrift   []string
		wantVerbs   []string
		// wantReplicas is spec.replicas in the applied object, -1 for none.
		wantReplicas int64
	}{
		{name: "repair takes replicas back", edit: replicasTo(5),
			wantAction: object.Configured, wantVerbs: []string{"patch"}, wantDrift: []string{object.DriftUnrecorded}, wantReplicas: 2},
		{name: "warn leaves replicas and names it", ann: warn, edit: replicasTo(5),
			wantAction: object.Unchanged, wantDrifted: []string{"spec.replicas"}, wantVerbs: []string{"get"}},
		{name: "warn names a removed annotation", ann: warn, edit: func(t *testing.T, l *unstructured.Unstructured) *unstructured.Unstructured {
			return takenBy(t, l, nil, "metadata", "annotations", "note")
		}, wantAction: object.Unchanged, wantDrifted: []string{"metadata.annotations.note"}, wantVerbs: []string{"get"}},
		{name: "warn: the other writer set the value back; the apply changes nothing", ann: warn, edit: replicasTo(2),
			wantAction: object.Configured, wantVerbs: []string{"get", "patch"}, wantReplicas: 2},
		{name: "warn: a new desired object is applied and takes the field back", ann: warn, edit: replicasTo(5), image: "nginx:2",
			wantAction: object.Configured, wantVerbs: []string{"patch"}, wantReplicas: 2},
		{name: "ignore leaves replicas and sends nothing", ann: ignore, edit: replicasTo(5),
			wantAction: object.Unchanged, wantVerbs: []string{"get"}},
		{name: "ignore leaves a removed annotation removed", ann: ignore, edit: func(t *testing.T, l *unstructured.Unstructured) *unstructured.Unstructured {
			return takenBy(t, l, nil, "metadata", "annotations", "note")
		}, wantAction: object.Unchanged, wantVerbs: []string{"get"}},
		{name: "ignore: a new desired object is applied without the field Loom lost", ann: ignore, edit: replicasTo(5), image: "nginx:2",
			wantAction: object.Configured, wantVerbs: []string{"get", "patch"}, wantReplicas: -1},
		{name: "ignore: a field Loom still owns is applied", ann: ignore, image: "nginx:2",
			wantAction: object.Configured, wantVerbs: []string{"get", "patch"}, wantReplicas: 2},
		{name: "ignore: another field's drift is repaired, the ignored one is not", ann: ignore, edit: func(t *testing.T, l *unstructured.Unstructured) *unstructured.Unstructured {
			return takenBy(t, replicasTo(5)(t, l), "other", "metadata", "labels", "app")
		}, wantAction: object.Configured, wantVerbs: []string{"get", "patch"}, wantDrift: []string{"metadata.labels.app"}, wantReplicas: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := driftDeployment(t, "nginx", tt.ann)
			live := servedFrom(t, first)
			if tt.edit != nil {
				live = tt.edit(t, live)
			}
			desired := first
			if tt.image != "" {
				desired = driftDeployment(t, tt.image, tt.ann)
			}
			a, verbs, sent := driftServer(t, &live)
			r := a.Apply(t.Context(), desired, pack.Slim(live, "loom"))
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Action != tt.wantAction {
				t.Errorf("action = %s, want %s", r.Action, tt.wantAction)
			}
			if diff := cmp.Diff(tt.wantDrifted, r.Drifted); diff != "" {
				t.Errorf("drifted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDrift, r.Drift); diff != "" {
				t.Errorf("drift reverted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantVerbs, *verbs); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if len(*sent) == 1 {
				v, ok, _ := unstructured.NestedFieldNoCopy((*sent)[0].Object, "spec", "replicas")
				got := int64(-1)
				if f, isNum := v.(float64); ok && isNum {
					got = int64(f)
				}
				if got != tt.wantReplicas {
					t.Errorf("applied spec.replicas = %d, want %d", got, tt.wantReplicas)
				}
			}
			if r.Action != object.Unchanged {
				return
			}
			// The next reconcile of the same child reads nothing and
			// decides the same.
			*verbs = nil
			again := a.Apply(t.Context(), desired, pack.Slim(live, "loom"))
			if again.Action != object.Unchanged || len(*verbs) != 0 {
				t.Errorf("again: action %s, requests %v; want unchanged, none", again.Action, *verbs)
			}
			if diff := cmp.Diff(tt.wantDrifted, again.Drifted); diff != "" {
				t.Errorf("again: drifted (-want +got):\n%s", diff)
			}
		})
	}
}

func replicasTo(n int64) func(*testing.T, *unstructured.Unstructured) *unstructured.Unstructured {
	return func(t *testing.T, l *unstructured.Unstructured) *unstructured.Unstructured {
		return takenBy(t, l, n, "spec", "replicas")
	}
}

// A field under an ignore path is left out of the applied object only when
// Loom's entry no longer holds it: applying without a field Loom owns
// would remove it.
func TestWithoutUnowned(t *testing.T) {
	desired := fixture.Object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {x: "1", z: "2"}}, data: {a: "1"}}`)
	field := func(names ...string) fieldpath.Path {
		p := make(fieldpath.Path, len(names))
		for i := range names {
			p[i] = fieldpath.PathElement{FieldName: &names[i]}
		}
		return p
	}
	tests := []struct {
		name   string
		ignore [][]string
		owned  *fieldpath.Set
		want   string
	}{
		{"all owned: nothing left out", [][]string{{"metadata", "annotations"}, {"data", "a"}},
			fieldpath.NewSet(field("metadata", "annotations", "x"), field("metadata", "annotations", "z"), field("data", "a")),
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {x: "1", z: "2"}}, data: {a: "1"}}`},
		{"one annotation lost", [][]string{{"metadata", "annotations"}},
			fieldpath.NewSet(field("metadata", "annotations", "z"), field("data", "a")),
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {z: "2"}}, data: {a: "1"}}`},
		{"every field of a map lost: the map goes", [][]string{{"data"}},
			fieldpath.NewSet(field("metadata", "annotations", "x")),
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {x: "1", z: "2"}}}`},
		{"a path the object does not set", [][]string{{"spec", "replicas"}}, fieldpath.NewSet(),
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {x: "1", z: "2"}}, data: {a: "1"}}`},
		{"a lost field not ignored stays", nil, fieldpath.NewSet(),
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {x: "1", z: "2"}}, data: {a: "1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withoutUnowned(desired, tt.ignore, tt.owned)
			if diff := cmp.Diff(fixture.Object(t, tt.want).Object, got.Object); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, ok := desired.GetAnnotations()["x"]; !ok {
		t.Error("withoutUnowned changed the desired object")
	}
	// Loom's own marks are never left out, whatever a path says.
	marked := fixture.Object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {loom.dev/drift-ignore: metadata}, labels: {app.kubernetes.io/managed-by: loom, x: "1"}}}`)
	got := withoutUnowned(marked, [][]string{{"metadata"}}, fieldpath.NewSet())
	want := `{apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {loom.dev/drift-ignore: metadata}, labels: {app.kubernetes.io/managed-by: loom}}}`
	if diff := cmp.Diff(fixture.Object(t, want).Object, got.Object); diff != "" {
		t.Errorf("Loom's marks (-want +got):\n%s", diff)
	}
}

// A child warned of, whose desired object then changes, is applied; the
// fields warned of are named as taken back (the DriftReverted Event).
func TestWarnedDriftTakenBackByANewDesiredObject(t *testing.T) {
	warn := map[string]string{object.AnnotationDrift: object.DriftWarn}
	live := takenBy(t, servedFrom(t, driftDeployment(t, "nginx", warn)), int64(5), "spec", "replicas")
	a, verbs, _ := driftServer(t, &live)
	if r := a.Apply(t.Context(), driftDeployment(t, "nginx", warn), pack.Slim(live, "loom")); r.Action != object.Unchanged || len(r.Drifted) != 1 {
		t.Fatalf("drifted child: action %s, drifted %v; want unchanged, spec.replicas", r.Action, r.Drifted)
	}
	r := a.Apply(t.Context(), driftDeployment(t, "nginx:2", warn), pack.Slim(live, "loom"))
	if r.Err != nil || r.Action != object.Configured {
		t.Fatalf("new desired object: action %s (err %v), want configured", r.Action, r.Err)
	}
	if diff := cmp.Diff([]string{"spec.replicas"}, r.Drift); diff != "" {
		t.Errorf("drift reverted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"get", "patch"}, *verbs); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// loom diff's dry run sends what Apply would: without an ignored field
// that another writer took, so the diff shows that writer's value as it
// is. On the old code the dry run sent spec.replicas, and the diff showed
// it taken back.
func TestDryRunLeavesOutIgnoredFieldsLoomLost(t *testing.T) {
	ignore := map[string]string{object.AnnotationDriftIgnore: "spec.replicas"}
	desired := driftDeployment(t, "nginx", ignore)
	live := takenBy(t, servedFrom(t, desired), int64(5), "spec", "replicas")
	a, verbs, sent := driftServer(t, &live)
	if _, err := a.DryRun(t.Context(), desired); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"get", "patch"}, *verbs); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy((*sent)[0].Object, "spec", "replicas"); ok {
		t.Error("the dry run sent spec.replicas")
	}
}
