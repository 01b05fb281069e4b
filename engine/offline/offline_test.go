package offline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/render"
)

// waitingSet is a set whose ConfigMap reads the Deployment it renders
// beside it: the controller applies the ConfigMap only once the
// Deployment is Available.
var waitingSet = map[string]string{
	config.File: "parent:\n  apiVersion: example.com/v1\n  kind: App\n",
	"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
`,
	"config.yaml": `{{- $web := lookup "apps/v1" "Deployment" .Namespace "web" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  available: {{ dig "status" "availableReplicas" 0 $web | quote }}
`,
}

// appParent is an App with the uid its children's ownerReferences name.
const appParent = "apiVersion: example.com/v1\nkind: App\nmetadata:\n  name: web\n  uid: uid-1\n"

// availableWeb is the live Deployment web, Available and owned by appParent.
const availableWeb = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  generation: 1
  ownerReferences:
  - {apiVersion: example.com/v1, kind: App, name: web, uid: uid-1, controller: true}
spec: {replicas: 2}
status:
  observedGeneration: 1
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`

// writeSet writes files into a new set folder and loads it.
func writeSet(t *testing.T, files map[string]string) *render.Set {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(filepath.Join(dir, render.TestsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		writeFile(t, filepath.Join(dir, name), text)
	}
	set, err := render.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// kindNames lists "Kind namespace/name" of each object in a YAML stream.
func kindNames(t *testing.T, stream string) []string {
	t.Helper()
	objs, err := render.ReadParents(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

func TestRenderParentsWaits(t *testing.T) {
	set := writeSet(t, waitingSet)
	tests := []struct {
		name         string
		lookups      string // "" for no reader
		wantChildren []string
		wantHeld     []string
	}{
		{
			name:         "no lookups: the ConfigMap waits",
			wantChildren: []string{"Deployment default/web"},
			wantHeld:     []string{"waiting: ConfigMap web-config waits for Deployment web: not found yet (App default/web)"},
		},
		{
			name:         "the Deployment is there and Available",
			lookups:      availableWeb,
			wantChildren: []string{"ConfigMap default/web-config", "Deployment default/web"},
		},
		{
			name:         "a Deployment of the same name that another parent controls is not this one's",
			lookups:      strings.Replace(availableWeb, "uid: uid-1", "uid: uid-2", 1),
			wantChildren: []string{"Deployment default/web"},
			wantHeld:     []string{"waiting: ConfigMap web-config waits for Deployment web: not found yet (App default/web)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parents, err := render.ReadParents(strings.NewReader(appParent))
			if err != nil {
				t.Fatal(err)
			}
			var reader render.Reader
			if tt.lookups != "" {
				if reader, err = ReadLookups(strings.NewReader(tt.lookups), "default"); err != nil {
					t.Fatal(err)
				}
			}
			got, err := RenderParents(set, parents, reader, nil, "default", DefaultTimeout)
			if err != nil {
				t.Fatalf("RenderParents: %v", err)
			}
			stream, err := render.MarshalStream(got.Children)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantChildren, kindNames(t, string(stream))); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantHeld, got.Held); diff != "" {
				t.Errorf("held (-want +got):\n%s", diff)
			}
		})
	}
}

// A failed file whose dependencies are all ready is an error, named after
// the parent and located in the template.
func TestRenderParentsBrokenFile(t *testing.T) {
	files := map[string]string{}
	for k, v := range waitingSet {
		files[k] = v
	}
	files["config.yaml"] = `{{- $web := lookup "apps/v1" "Deployment" .Namespace "web" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  paused: {{ required "web is not paused" $web.spec.paused }}
`
	set := writeSet(t, files)
	parents, err := render.ReadParents(strings.NewReader(appParent))
	if err != nil {
		t.Fatal(err)
	}
	reader, err := ReadLookups(strings.NewReader(availableWeb), "default")
	if err != nil {
		t.Fatal(err)
	}
	_, err = RenderParents(set, parents, reader, nil, "default", DefaultTimeout)
	if err == nil || !strings.HasPrefix(err.Error(), "render App default/web: config.yaml:7: ") {
		t.Fatalf("err = %v, want the file's error at config.yaml:7", err)
	}
}

func TestReadLookups(t *testing.T) {
	r, err := ReadLookups(strings.NewReader(`apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: listed, namespace: shop}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: listed-default}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: plain}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: example.com/v1
kind: ClusterThing
metadata: {name: big, namespace: ""}
`), "dev")
	if err != nil {
		t.Fatal(err)
	}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	got := map[string][]string{}
	for _, ns := range []string{"shop", "dev", ""} {
		items, err := r.List(cm, ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			got[ns] = append(got[ns], (&unstructured.Unstructured{Object: it}).GetName())
		}
	}
	want := map[string][]string{"shop": {"listed"}, "dev": {"listed-default", "plain"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfigMaps by namespace (-want +got):\n%s", diff)
	}
	scope := map[string]bool{}
	for _, gvk := range []schema.GroupVersionKind{cm, {Version: "v1", Kind: "Namespace"}, {Group: "example.com", Version: "v1", Kind: "ClusterThing"}} {
		scope[gvk.Kind], _ = r.Namespaced(gvk)
	}
	if diff := cmp.Diff(map[string]bool{"ConfigMap": true, "Namespace": false, "ClusterThing": false}, scope); diff != "" {
		t.Errorf("Namespaced (-want +got):\n%s", diff)
	}
	if ns, _ := r.Get(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "shop"); ns == nil {
		t.Error("Namespace shop not found: it must keep no namespace")
	}

	if _, err := ReadLookups(strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"), "dev"); err == nil || !strings.Contains(err.Error(), "metadata.name") {
		t.Errorf("an object without a name: err = %v, want one naming metadata.name", err)
	}
}

// A case's NAME.lookups.yaml answers its lookups and is not a case itself;
// one that belongs to no case is reported.
func TestRunWithLookupsFile(t *testing.T) {
	set := copySet(t)
	tests := filepath.Join(set.Dir, render.TestsDir)
	writeFile(t, filepath.Join(tests, "minimal"+LookupsSuffix), `# The namespace's platform settings.
apiVersion: v1
kind: ConfigMap
metadata:
  name: loom-platform
data:
  registryMirror: mirror.example.com/
`)
	r := run(t, set, false)["minimal"]
	if r.Err != nil || !strings.Contains(r.Diff, "+      - image: mirror.example.com/nginx:1.27") {
		t.Fatalf("case minimal: Err = %v, want a diff to an image from the mirror:\n%s", r.Err, r.Diff)
	}
	for name, r := range run(t, set, true) {
		if r.Failed() || r.Updated != (name == "minimal") {
			t.Errorf("update: case %s: Updated = %v, Failed() = %v (%v)", name, r.Updated, r.Failed(), r.Err)
		}
	}
	if !strings.Contains(readFile(t, goldenPath(set, "minimal")), "- image: mirror.example.com/nginx:1.27") {
		t.Error("the updated golden file has no image from the mirror")
	}

	writeFile(t, filepath.Join(tests, "typo"+LookupsSuffix), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	results, err := Run(set, false)
	if err != nil {
		t.Fatal(err)
	}
	var orphan *Result
	for i := range results {
		if results[i].Case == "typo" {
			orphan = &results[i]
		}
	}
	if orphan == nil || orphan.Err == nil || orphan.Err.Error() != "typo.lookups.yaml answers the lookups of no case: there is no typo.yaml" {
		t.Errorf("a lookups file of no case: %+v, want a failed result saying so", orphan)
	}
}
