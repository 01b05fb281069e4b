package rollouts

import (
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/engine/render"
)

// The TemplateSet and the TemplateRevision a rollout store creates, field
// by field, as the API server receives them: what a restarted or older
// Loom, kubectl get and loom rollout read back.
func TestRolloutStoreCreates(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{
			v1alpha1.TemplateSetGVR:      "TemplateSetList",
			v1alpha1.TemplateRevisionGVR: "TemplateRevisionList",
		})
	s := &rolloutStore{client: client, name: "app.team-a", namespace: "team-a", fieldManager: "loom", timeout: time.Second}
	set, err := render.LoadFS(fstest.MapFS{
		"loom.yaml": {Data: []byte("parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource}\n")},
		"cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n")},
	}, "/sets/app")
	if err != nil {
		t.Fatal(err)
	}

	ts, err := s.createSet(t.Context(), "/sets/app")
	if err != nil {
		t.Fatal(err)
	}
	wantSet := `
apiVersion: loom.dev/v1alpha1
kind: TemplateSet
metadata:
  name: app.team-a
  labels: {loom.dev/set: app.team-a, loom.dev/namespace: team-a}
  annotations: {loom.dev/folder: /sets/app}
`
	if diff := cmp.Diff(yamlObj(t, wantSet).Object, ts.Object); diff != "" {
		t.Errorf("created TemplateSet (-want +got):\n%s", diff)
	}

	ts.SetUID("u1")
	if err := s.keep(t.Context(), set, "r1", ts); err != nil {
		t.Fatal(err)
	}
	rev, err := s.revision(t.Context(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	wantRev := `
apiVersion: loom.dev/v1alpha1
kind: TemplateRevision
metadata:
  name: app.team-a-r1
  labels: {loom.dev/set: app.team-a, loom.dev/namespace: team-a}
  ownerReferences: [{apiVersion: loom.dev/v1alpha1, kind: TemplateSet, name: app.team-a, uid: u1}]
set: app.team-a
revision: r1
files:
  loom.yaml: "parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource}\n"
  cm.yaml: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n"
`
	if diff := cmp.Diff(yamlObj(t, wantRev).Object, rev.Object); diff != "" {
		t.Errorf("kept TemplateRevision (-want +got):\n%s", diff)
	}
	loaded, err := loadRevision("/sets/app", rev)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Revision() != set.Revision() {
		t.Errorf("the kept revision loads as revision %s, want %s", loaded.Revision(), set.Revision())
	}

	// Without a known owner, and listed by the set's label.
	if err := s.keep(t.Context(), set, "r2", nil); err != nil {
		t.Fatal(err)
	}
	items, err := s.listRevisions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range items {
		names = append(names, it.GetName())
		if it.GetName() == "app.team-a-r2" && it.GetOwnerReferences() != nil {
			t.Errorf("revision r2 has owners %v, want none", it.GetOwnerReferences())
		}
	}
	if diff := cmp.Diff([]string{"app.team-a-r1", "app.team-a-r2"}, names); diff != "" {
		t.Errorf("listed revisions (-want +got):\n%s", diff)
	}
}
