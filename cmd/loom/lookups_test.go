package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/render"
)

// executeSplit runs the loom command line with args and stdin, and returns
// what it printed on stdout and on stderr, and its error.
func executeSplit(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCommand()
	var stdout, stderr bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err := root.Execute()
	return stdout.String(), stderr.String(), err
}

// writeFiles writes files into dir and returns dir.
func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// webSet renders a Deployment web and a ConfigMap web-config that reads
// it: the ConfigMap waits until the Deployment is Available.
var webSet = map[string]string{
	"loom.yaml": "parent:\n  apiVersion: example.com/v1\n  kind: App\n",
	"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
`,
	"config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  available: {{ dig "status" "availableReplicas" 0 (lookup "apps/v1" "Deployment" .Namespace "web") | quote }}
`,
}

const (
	webParent = "apiVersion: example.com/v1\nkind: App\nmetadata:\n  name: web\n  uid: uid-1\n"
	// liveWeb is the Deployment web of webParent, as kubectl prints it.
	liveWeb = `apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
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
    readyReplicas: AVAILABLE
    availableReplicas: AVAILABLE
    conditions:
    - {type: Available, status: "AVAILABLE_STATUS", reason: Whatever}
    - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`
)

// liveWebWith is liveWeb with n available replicas of 2.
func liveWebWith(n string) string {
	status := "True"
	if n != "2" {
		status = "False"
	}
	return strings.NewReplacer("AVAILABLE_STATUS", status, "AVAILABLE", n).Replace(liveWeb)
}

func TestRenderLookups(t *testing.T) {
	dir := t.TempDir()
	set := writeFiles(t, filepath.Join(dir, "app"), webSet)
	writeFiles(t, dir, map[string]string{
		"parent.yaml":    webParent,
		"rolling.yaml":   liveWebWith("0"),
		"available.yaml": liveWebWith("2"),
	})
	cycle := writeFiles(t, filepath.Join(dir, "cycle"), map[string]string{
		"loom.yaml": webSet["loom.yaml"],
		"a.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations: {b: {{ lookup \"v1\" \"ConfigMap\" .Namespace \"b\" | len | quote }}}\n",
		"b.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  annotations: {a: {{ lookup \"v1\" \"ConfigMap\" .Namespace \"a\" | len | quote }}}\n",
	})
	broken := writeFiles(t, filepath.Join(dir, "broken"), map[string]string{
		"loom.yaml":       webSet["loom.yaml"],
		"deployment.yaml": webSet["deployment.yaml"],
		"config.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  paused: {{ required \"web is not paused\" (lookup \"apps/v1\" \"Deployment\" .Namespace \"web\").spec.paused }}\n",
	})
	parent := filepath.Join(dir, "parent.yaml")
	tests := []struct {
		name       string
		stdin      string
		args       []string
		wantOut    []string // "Kind name" printed on stdout
		wantStderr string
		wantErr    string
	}{
		{
			name:       "no lookups: the ConfigMap waits for the Deployment",
			args:       []string{"-t", set, "-f", parent},
			wantOut:    []string{"Deployment web"},
			wantStderr: "waiting: ConfigMap web-config waits for Deployment web: not found yet (App default/web)\n",
		},
		{
			name:       "the Deployment is rolling out",
			args:       []string{"-t", set, "-f", parent, "--lookups", filepath.Join(dir, "rolling.yaml")},
			wantOut:    []string{"Deployment web"},
			wantStderr: "waiting: ConfigMap web-config waits for Deployment web: Available: 0/2 (App default/web)\n",
		},
		{
			name:    "the Deployment is Available",
			args:    []string{"-t", set, "-f", parent, "--lookups", filepath.Join(dir, "available.yaml")},
			wantOut: []string{"ConfigMap web-config", "Deployment web"},
		},
		{
			name:    "lookups from stdin",
			stdin:   liveWebWith("2"),
			args:    []string{"-t", set, "-f", parent, "--lookups", "-"},
			wantOut: []string{"ConfigMap web-config", "Deployment web"},
		},
		{
			name:       "a cycle holds both",
			args:       []string{"-t", cycle, "-f", parent},
			wantStderr: "dependency cycle: ConfigMap a, ConfigMap b look each other up, so none of them can be created first (App default/web)\n",
		},
		{
			name:    "a file that fails although what it read is ready",
			args:    []string{"-t", broken, "-f", parent, "--lookups", filepath.Join(dir, "available.yaml")},
			wantErr: "render App default/web: config.yaml:6: ",
		},
		{
			name:    "stdin read twice",
			args:    []string{"-t", set, "-f", "-", "--lookups", "-"},
			wantErr: "-f - and --lookups - cannot both read stdin",
		},
		{
			name:    "missing lookups file",
			args:    []string{"-t", set, "-f", parent, "--lookups", filepath.Join(dir, "nope.yaml")},
			wantErr: "nope.yaml",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := executeSplit(t, tt.stdin, append([]string{"render"}, tt.args...)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one with %q; stdout:\n%s", err, tt.wantErr, stdout)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v\n%s", err, stderr)
			}
			objs, err := render.ReadParents(strings.NewReader(stdout))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+" "+o.GetName())
			}
			if diff := cmp.Diff(tt.wantOut, got); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStderr, stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// `loom test` answers a case's lookups from its NAME.lookups.yaml, which is
// not a case of its own.
func TestGoldenCommandWithLookups(t *testing.T) {
	dir := copySet(t)
	tests := filepath.Join(dir, render.TestsDir)
	writeFiles(t, tests, map[string]string{
		"registry.yaml": "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: web\nspec:\n  image: nginx:1.27\n",
		"registry.lookups.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: loom-platform
data:
  registryMirror: mirror.example.com
`,
	})
	out, err := execute(t, "", "test", "--update", dir)
	if err != nil || !strings.Contains(out, "7 passed, 0 failed, 1 updated") {
		t.Fatalf("--update: err %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(tests, "registry.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "image: mirror.example.com/nginx:1.27") {
		t.Errorf("registry.golden.yaml has no image from the mirror:\n%s", b)
	}
	if out, err = execute(t, "", "test", dir); err != nil || !strings.Contains(out, "8 passed, 0 failed") {
		t.Fatalf("after --update: err %v\n%s", err, out)
	}

	// The ConfigMap is what the golden file depends on.
	if err := os.Remove(filepath.Join(tests, "registry.lookups.yaml")); err != nil {
		t.Fatal(err)
	}
	out, err = execute(t, "", "test", dir)
	if err == nil || !strings.Contains(out, "FAIL "+dir+"/registry") || !strings.Contains(out, "-      - image: mirror.example.com/nginx:1.27") {
		t.Fatalf("without the lookups file: err %v, want registry to fail with a diff:\n%s", err, out)
	}
}

func TestLiveReader(t *testing.T) {
	objs := []runtime.Object{}
	for _, doc := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: zeta, namespace: shop}\ndata: {k: z}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: alpha, namespace: shop}\ndata: {k: a}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: elsewhere}\n",
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n",
	} {
		o, err := render.ReadParents(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o[0])
	}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	ns := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList",
		{Version: "v1", Resource: "namespaces"}: "NamespaceList",
	}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(cm, meta.RESTScopeNamespace)
	mapper.Add(ns, meta.RESTScopeRoot)
	r := &liveReader{ctx: t.Context(), p: &place{client: client, applier: apply.New(client, mapper, "")}}

	t.Run("get", func(t *testing.T) {
		got, err := r.Get(cm, "shop", "alpha")
		if err != nil {
			t.Fatal(err)
		}
		if k, _, _ := unstructured.NestedString(got, "data", "k"); k != "a" {
			t.Errorf("Get shop/alpha = %v, want data.k a", got)
		}
		if got, err := r.Get(cm, "shop", "nope"); got != nil || err != nil {
			t.Errorf("Get of a missing object = %v, %v; want nil, nil", got, err)
		}
		if got, err := r.Get(ns, "", "shop"); got == nil || err != nil {
			t.Errorf("Get of Namespace shop = %v, %v", got, err)
		}
		if _, err := r.Get(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Nothing"}, "shop", "x"); err == nil {
			t.Error("Get of a kind the API server does not serve succeeded")
		}
	})
	t.Run("list is of one namespace, by name", func(t *testing.T) {
		items, err := r.List(cm, "shop")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, name(it))
		}
		if diff := cmp.Diff([]string{"alpha", "zeta"}, got); diff != "" {
			t.Errorf("List (-want +got):\n%s", diff)
		}
	})
	t.Run("scope from the REST mapping", func(t *testing.T) {
		got := map[string]bool{}
		for _, gvk := range []schema.GroupVersionKind{cm, ns} {
			namespaced, err := r.Namespaced(gvk)
			if err != nil {
				t.Fatal(err)
			}
			got[gvk.Kind] = namespaced
		}
		if diff := cmp.Diff(map[string]bool{"ConfigMap": true, "Namespace": false}, got); diff != "" {
			t.Errorf("Namespaced (-want +got):\n%s", diff)
		}
	})
	t.Run("a template reads through it", func(t *testing.T) {
		set, err := render.Load(writeFiles(t, t.TempDir(), map[string]string{
			"loom.yaml": webSet["loom.yaml"] + "lookups:\n- apiVersion: v1\n  kind: ConfigMap\n- apiVersion: v1\n  kind: Namespace\n",
			"out.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: out\ndata:\n  k: {{ (lookup \"v1\" \"ConfigMap\" .Namespace \"zeta\").data.k }}\n  count: {{ len (lookup \"v1\" \"ConfigMap\" .Namespace \"\").items | quote }}\n  ns: {{ (lookup \"v1\" \"Namespace\" \"\" .Namespace).metadata.name }}\n",
		}))
		if err != nil {
			t.Fatal(err)
		}
		parents, err := render.ReadParents(strings.NewReader("apiVersion: example.com/v1\nkind: App\nmetadata: {name: web, namespace: shop}\n"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := set.RenderWith(parents[0], r)
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := unstructured.NestedStringMap(out.Children[0].Object, "data")
		if diff := cmp.Diff(map[string]string{"k": "z", "count": "2", "ns": "shop"}, got); diff != "" {
			t.Errorf("rendered data (-want +got):\n%s", diff)
		}
	})
}
