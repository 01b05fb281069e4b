package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// A TemplateSet as the API server returns it mid-rollout: a user paused
// it, Loom wrote its status.
const templateSetYAML = `
apiVersion: loom.dev/v1alpha1
kind: TemplateSet
metadata:
  name: myresource.team-a
  uid: 6f1c2a4e-0b7d-4b8e-9a55-1d2e3f4a5b6c
  resourceVersion: "48213"
  generation: 3
  creationTimestamp: "2026-11-27T10:00:00Z"
  labels:
    loom.dev/set: myresource.team-a
    loom.dev/namespace: team-a
  annotations:
    loom.dev/folder: templates/myresource
  managedFields:
  - manager: loom
    operation: Update
    apiVersion: loom.dev/v1alpha1
    time: "2026-11-27T10:05:00Z"
    fieldsType: FieldsV1
    subresource: status
    fieldsV1:
      f:status:
        .: {}
        f:phase: {}
spec:
  paused: true
  resume: "2026-11-27T10:04:00Z"
  promote: 9c1e07d2
status:
  stableRevision: 5b8a1f30
  candidateRevision: 9c1e07d2
  phase: Paused
  step: 2
  steps: 4
  threshold: "9223372036854775807"
  stepStartedAt: "2026-11-27T10:03:00Z"
  stepReadyAt: "2026-11-27T10:04:30Z"
  observedResume: "2026-11-27T10:04:00Z"
  message: paused by spec.paused
  parents:
    total: 10
    moved: 5
    ready: 4
  set: templates/myresource
  parentKind: example.loom.dev/v1/MyResource
  conditions:
  - type: Ready
    status: "False"
    reason: Paused
    message: paused by spec.paused
    lastTransitionTime: "2026-11-27T10:05:00Z"
    observedGeneration: 3
  - type: Reconciling
    status: "False"
    reason: Paused
    message: paused by spec.paused
    lastTransitionTime: "2026-11-27T10:05:00Z"
    observedGeneration: 3
  - type: Stalled
    status: "False"
    reason: Paused
    message: ""
    lastTransitionTime: "2026-11-27T10:00:00Z"
    observedGeneration: 3
`

// A TemplateRevision as Loom keeps it, owned by its TemplateSet.
const templateRevisionYAML = `
apiVersion: loom.dev/v1alpha1
kind: TemplateRevision
metadata:
  name: myresource.team-a-5b8a1f30
  uid: 0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d
  resourceVersion: "48001"
  generation: 1
  creationTimestamp: "2026-11-27T10:00:00Z"
  labels:
    loom.dev/set: myresource.team-a
    loom.dev/namespace: team-a
  ownerReferences:
  - apiVersion: loom.dev/v1alpha1
    kind: TemplateSet
    name: myresource.team-a
    uid: 6f1c2a4e-0b7d-4b8e-9a55-1d2e3f4a5b6c
set: myresource.team-a
revision: 5b8a1f30
files:
  loom.yaml: |
    parent:
      apiVersion: example.loom.dev/v1
      kind: MyResource
    rollout:
      steps: [10%, 50%, 100%]
  deployment.yaml: |
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: {{ .parent.metadata.name }}
`

func parse(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestRoundTrip turns realistic objects into their types and back, and
// wants the input: no field is lost, renamed or added on the way.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		conv func(*unstructured.Unstructured) (*unstructured.Unstructured, error)
	}{
		{"TemplateSet", templateSetYAML, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			ts, err := TemplateSetFromUnstructured(u)
			if err != nil {
				return nil, err
			}
			return ts.ToUnstructured()
		}},
		{"TemplateSet without status", `
apiVersion: loom.dev/v1alpha1
kind: TemplateSet
metadata:
  name: app
  labels: {loom.dev/set: app}
  annotations: {loom.dev/folder: templates/app}
`, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			ts, err := TemplateSetFromUnstructured(u)
			if err != nil {
				return nil, err
			}
			return ts.ToUnstructured()
		}},
		{"TemplateRevision", templateRevisionYAML, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			rev, err := TemplateRevisionFromUnstructured(u)
			if err != nil {
				return nil, err
			}
			return rev.ToUnstructured()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := parse(t, tc.yaml)
			// yaml gives float64 for numbers where the API server's JSON
			// decoder gives int64: compare in the client's terms.
			in = normalize(t, in)
			got, err := tc.conv(in.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in.Object, got.Object); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// normalize is u as the dynamic client decodes it (integers as int64).
func normalize(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTypedFields checks that the conversion lands each field where the
// code reads it, so that a round trip cannot pass by keeping everything
// in a field nobody reads.
func TestTypedFields(t *testing.T) {
	ts, err := TemplateSetFromUnstructured(normalize(t, parse(t, templateSetYAML)))
	if err != nil {
		t.Fatal(err)
	}
	wantSpec := TemplateSetSpec{Paused: true, Resume: "2026-11-27T10:04:00Z", Promote: "9c1e07d2"}
	if diff := cmp.Diff(wantSpec, ts.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	st := ts.Status
	if st.Phase != PhasePaused || st.Step != 2 || st.Steps != 4 || st.StableRevision != "5b8a1f30" ||
		st.CandidateRevision != "9c1e07d2" || st.Set != "templates/myresource" ||
		st.ParentKind != "example.loom.dev/v1/MyResource" || st.Parents != (ParentCounts{Total: 10, Moved: 5, Ready: 4}) {
		t.Errorf("status: got %+v", st)
	}
	if len(st.Conditions) != 3 || st.Conditions[0].Type != ConditionReady || st.Conditions[0].Reason != ReasonPaused ||
		st.Conditions[0].Status != metav1.ConditionFalse || st.Conditions[0].ObservedGeneration != 3 {
		t.Errorf("conditions: got %+v", st.Conditions)
	}
	if ts.Labels[SetLabel] != "myresource.team-a" || ts.Labels[NamespaceLabel] != "team-a" ||
		ts.Annotations[FolderAnnotation] != "templates/myresource" {
		t.Errorf("metadata: got labels %v, annotations %v", ts.Labels, ts.Annotations)
	}

	rev, err := TemplateRevisionFromUnstructured(normalize(t, parse(t, templateRevisionYAML)))
	if err != nil {
		t.Fatal(err)
	}
	if rev.Set != "myresource.team-a" || rev.Revision != "5b8a1f30" || len(rev.Files) != 2 ||
		rev.OwnerReferences[0].Kind != TemplateSetKind {
		t.Errorf("revision: got %+v", rev)
	}
}

// TestFromUnstructuredErrors wants a clear error, never a zero object,
// for an object of another kind or with a field of the wrong type.
func TestFromUnstructuredErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
		conv             func(*unstructured.Unstructured) error
	}{
		{"TemplateSet of another kind", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n",
			"ConfigMap cm is not a TemplateSet.loom.dev",
			func(u *unstructured.Unstructured) error { _, err := TemplateSetFromUnstructured(u); return err }},
		{"TemplateRevision read as TemplateSet",
			"apiVersion: loom.dev/v1alpha1\nkind: TemplateRevision\nmetadata: {name: r}\n",
			"TemplateRevision r is not a TemplateSet.loom.dev",
			func(u *unstructured.Unstructured) error { _, err := TemplateSetFromUnstructured(u); return err }},
		{"status.step a string",
			"apiVersion: loom.dev/v1alpha1\nkind: TemplateSet\nmetadata: {name: ts}\nstatus: {step: two}\n",
			"read TemplateSet ts: ",
			func(u *unstructured.Unstructured) error { _, err := TemplateSetFromUnstructured(u); return err }},
		{"files a list",
			"apiVersion: loom.dev/v1alpha1\nkind: TemplateRevision\nmetadata: {name: r}\nfiles: [a]\n",
			"read TemplateRevision r: ",
			func(u *unstructured.Unstructured) error { _, err := TemplateRevisionFromUnstructured(u); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.conv(normalize(t, parse(t, tc.yaml)))
			if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
				t.Errorf("got error %v, want one starting %q", err, tc.want)
			}
		})
	}
}

// TestToUnstructuredNew checks an object built in code: apiVersion and
// kind are set, and no creationTimestamp: null, spec: {} or status: {}
// is sent to the API server.
func TestToUnstructuredNew(t *testing.T) {
	ts := &TemplateSet{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{SetLabel: "app"}}}
	got, err := ts.ToUnstructured()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "loom.dev/v1alpha1", "kind": "TemplateSet",
		"metadata": map[string]any{"name": "app", "labels": map[string]any{"loom.dev/set": "app"}},
	}
	if diff := cmp.Diff(want, got.Object); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
