package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/config"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// lookupConfig declares ConfigMaps (also readable in namespace shared) and
// Namespaces; every other kind is undeclared.
const lookupConfig = testConfig + `lookups:
- apiVersion: v1
  kind: ConfigMap
  namespaces: [shared]
- apiVersion: v1
  kind: Namespace
`

// lookupObjects is what the cluster holds in the lookup tests. The parent
// (app) is App default/web with uid uid-1.
const lookupObjects = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {color: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: alpha, namespace: default}
data: {color: green}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: global, namespace: shared}
data: {region: eu}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: private, namespace: other}
data: {key: secret}
---
apiVersion: v1
kind: Namespace
metadata:
  name: default
  labels: {team: a}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/fast
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  ownerReferences:
  - {apiVersion: example.com/v1, kind: App, name: web, uid: uid-1, controller: true}
status: {readyReplicas: 3}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: theirs
  namespace: default
  ownerReferences:
  - {apiVersion: example.com/v1, kind: App, name: other, uid: uid-2, controller: true}
status: {readyReplicas: 1}
---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: default}
stringData: {password: hunter2}
`

// lookupReader returns a Reader over lookupObjects.
func lookupReader(t testing.TB) *ObjectsReader {
	t.Helper()
	objs, err := ReadParents(strings.NewReader(lookupObjects))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return NewObjectsReader(objs)
}

// lookupChildren renders two Deployments, web and theirs: kinds that are
// not declared, so readable only as this parent's children.
const lookupChildren = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: theirs
  namespace: default
`

// outFile renders a ConfigMap "out" whose data.got is what expr prints;
// expr is on line 7.
func outFile(expr string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: out\ndata:\n  got: |-\n    " + expr + "\n"
}

// dataOf returns data.key of the child named name, failing when absent.
func dataOf(t testing.TB, children []*unstructured.Unstructured, name, key string) string {
	t.Helper()
	for _, c := range children {
		if c.GetName() == name {
			v, ok, err := unstructured.NestedString(c.Object, "data", key)
			if err != nil || !ok {
				t.Fatalf("%s has no data.%s: %v", name, key, err)
			}
			return v
		}
	}
	t.Fatalf("no child %s among %v", name, names(children))
	return ""
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name     string
		expr     string // a template line, in outFile
		noReader bool
		// clusterParent makes the parent cluster-scoped: it has no
		// namespace of its own to read.
		clusterParent bool
		// noUID makes the parent one that was never stored, as in loom
		// render and loom test.
		noUID   bool
		want    string   // what expr prints
		wantErr []string // substrings of the error, which is at out.yaml:7
	}{
		{name: "declared kind found",
			expr: `{{ (lookup "v1" "ConfigMap" .Namespace "settings").data.color }}`, want: "blue"},
		{name: "declared kind missing is an empty map",
			expr: `{{ lookup "v1" "ConfigMap" .Namespace "nope" | toJson }}`, want: "{}"},
		{name: "dig into a found object",
			expr: `{{ dig "data" "color" "none" (lookup "v1" "ConfigMap" .Namespace "settings") }}`, want: "blue"},
		{name: "dig into a missing object",
			expr: `{{ dig "data" "color" "none" (lookup "v1" "ConfigMap" .Namespace "nope") }}`, want: "none"},
		{name: "default over a missing object",
			expr: `{{ (lookup "v1" "ConfigMap" .Namespace "nope").data | default "red" }}`, want: "red"},
		{name: "list: Helm's shape, items by name",
			expr: `{{ $l := lookup "v1" "ConfigMap" .Namespace "" }}{{ $l.apiVersion }}|{{ $l.kind }}|{{ range $l.items }}{{ .metadata.name }},{{ end }}`,
			want: "v1|ConfigMapList|alpha,settings,"},
		{name: "list in a declared namespace",
			expr: `{{ range (lookup "v1" "ConfigMap" "shared" "").items }}{{ .data.region }}{{ end }}`, want: "eu"},
		{name: "list without a reader has no items",
			expr:     `{{ lookup "v1" "ConfigMap" .Namespace "" | toJson }}`,
			noReader: true, want: `{"apiVersion":"v1","items":[],"kind":"ConfigMapList"}`},
		{name: "declared kind in a declared namespace",
			expr: `{{ (lookup "v1" "ConfigMap" "shared" "global").data.region }}`, want: "eu"},
		{name: "declared kind in another namespace is refused",
			expr:    `{{ (lookup "v1" "ConfigMap" "other" "private").data.key }}`,
			wantErr: []string{"lookup refused", `namespace "other" is neither the parent's ("default") nor declared for ConfigMap`}},
		{name: "namespaced kind across all namespaces is refused",
			expr:    `{{ lookup "v1" "ConfigMap" "" "settings" }}`,
			wantErr: []string{"lookup refused", "ConfigMap across all namespaces"}},
		{name: "undeclared kind that is not a child is refused",
			expr:    `{{ (lookup "v1" "Secret" .Namespace "db").stringData }}`,
			wantErr: []string{"lookup refused", "Secret default/db", "kind Secret is not declared in loom.yaml lookups"}},
		{name: "undeclared kind that is not a child is refused without a reader too",
			expr: `{{ (lookup "v1" "Secret" .Namespace "db").stringData }}`, noReader: true,
			wantErr: []string{"lookup refused", "Secret default/db"}},
		{name: "undeclared kind: a child this parent controls",
			expr: `{{ (lookup "apps/v1" "Deployment" .Namespace "web").status.readyReplicas }}`, want: "3"},
		{name: "undeclared kind: a rendered child controlled by another parent is not found",
			expr: `{{ lookup "apps/v1" "Deployment" .Namespace "theirs" | toJson }}`, want: "{}"},
		{name: "undeclared kind: a parent never stored reads its lookups file's child as it is",
			expr: `{{ (lookup "apps/v1" "Deployment" .Namespace "theirs").metadata.name }}`, noUID: true, want: "theirs"},
		{name: "undeclared kind: a list is refused",
			expr:    `{{ lookup "apps/v1" "Deployment" .Namespace "" }}`,
			wantErr: []string{"lookup refused", "list of Deployment"}},
		{name: "undeclared kind in another namespace is refused",
			expr:    `{{ lookup "apps/v1" "Deployment" "shared" "web" }}`,
			wantErr: []string{"lookup refused", `namespace "shared" is neither the parent's`}},
		{name: "declared cluster-scoped kind",
			expr: `{{ (lookup "v1" "Namespace" "" "default").metadata.labels.team }}`, want: "a"},
		{name: "declared cluster-scoped kind ignores a namespace argument",
			expr: `{{ (lookup "v1" "Namespace" .Namespace "default").metadata.labels.team }}`, want: "a"},
		{name: "declared cluster-scoped kind without a reader is an empty map",
			expr: `{{ lookup "v1" "Namespace" "" "default" | toJson }}`, noReader: true, want: "{}"},
		{name: "undeclared cluster-scoped kind is refused",
			expr:    `{{ lookup "storage.k8s.io/v1" "StorageClass" "" "fast" }}`,
			wantErr: []string{"lookup refused", "StorageClass fast is cluster-scoped, and not declared"}},
		{name: "cluster-scoped parent: a namespaced kind across all namespaces is refused",
			expr: `{{ lookup "v1" "ConfigMap" "" "" }}`, clusterParent: true,
			wantErr: []string{"lookup refused", "ConfigMap across all namespaces"}},
		{name: "cluster-scoped parent: a declared namespace",
			expr: `{{ (lookup "v1" "ConfigMap" "shared" "global").data.region }}`, clusterParent: true, want: "eu"},
		{name: "cluster-scoped parent: a declared cluster-scoped kind",
			expr: `{{ (lookup "v1" "Namespace" "" "default").metadata.labels.team }}`, clusterParent: true, want: "a"},
		{name: "cluster-scoped parent: .Namespace is a string to pass on",
			expr: `{{ (lookup "v1" "Namespace" .Namespace "default").metadata.labels.team }}`, clusterParent: true, want: "a"},
		{name: "bad apiVersion",
			expr:    `{{ lookup "a/b/c" "Thing" .Namespace "x" }}`,
			wantErr: []string{`lookup: apiVersion "a/b/c"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, map[string]string{config.File: lookupConfig, "out.yaml": outFile(tt.expr), "web.yaml": lookupChildren})
			var reader Reader
			if !tt.noReader {
				reader = lookupReader(t)
			}
			parent := app(t, "")
			if tt.clusterParent {
				parent.SetNamespace("")
			}
			if tt.noUID {
				parent.SetUID("")
			}
			out, err := s.RenderWith(parent, reader)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("RenderWith succeeded, want an error; out.yaml rendered %q", dataOf(t, out.Children, "out", "got"))
				}
				wantPrefix(t, err.Error(), "out.yaml:7: ")
				wantContains(t, err.Error(), tt.wantErr...)
				var re *Error
				if !errors.As(err, &re) || re.Line != 7 {
					t.Errorf("error %v is not an *Error at line 7", err)
				}
				if refused := strings.Contains(err.Error(), "lookup refused"); refused != errors.Is(err, ErrLookupRefused) {
					t.Errorf("errors.Is(err, ErrLookupRefused) = %v for %v", !refused, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("RenderWith: %v", err)
			}
			if diff := cmp.Diff(tt.want, dataOf(t, out.Children, "out", "got")); diff != "" {
				t.Errorf("lookup printed (-want +got):\n%s", diff)
			}
		})
	}
}

// summary names a read and says whether it found something: "Deployment.apps
// default/web own found".
func summary(rd Read) string {
	s := rd.String()
	if rd.Own {
		s += " own"
	}
	if rd.Object != nil {
		s += " found"
	}
	return s
}

// TestLookupReadsByDocument checks that each lookup belongs to the document
// the file was writing when it was made.
func TestLookupReadsByDocument(t *testing.T) {
	s := loadSet(t, map[string]string{
		config.File: lookupConfig,
		"cms.yaml": `{{- $top := lookup "v1" "ConfigMap" .Namespace "settings" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: b
data:
  color: {{ (lookup "v1" "ConfigMap" .Namespace "alpha").data.color }}
  region: {{ (lookup "v1" "ConfigMap" "shared" "global").data.region }}
---
{{- if false }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: skipped
{{- end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  annotations:
    n: {{ len (lookup "v1" "ConfigMap" .Namespace "").items | quote }}
{{- $_ := lookup "v1" "ConfigMap" .Namespace "nope" }}
`,
		"web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: theirs
  annotations:
    ready: {{ (lookup "apps/v1" "Deployment" .Namespace "web").status.readyReplicas | quote }}
`,
	})
	out, err := s.RenderWith(app(t, ""), lookupReader(t))
	if err != nil {
		t.Fatalf("RenderWith: %v", err)
	}
	got := map[string][]string{}
	for i, c := range out.Children {
		var reads []string
		for _, rd := range out.Reads[i] {
			reads = append(reads, summary(rd))
		}
		got[c.GetKind()+" "+c.GetName()] = reads
	}
	want := map[string][]string{
		"ConfigMap a":       {"ConfigMap default/settings found"},
		"ConfigMap b":       {"ConfigMap default/alpha found", "ConfigMap shared/global found"},
		"ConfigMap c":       {"ConfigMap default/*", "ConfigMap default/nope"},
		"Deployment web":    nil,
		"Deployment theirs": {"Deployment.apps default/web own found"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reads by child (-want +got):\n%s", diff)
	}
	var all []string
	for _, rd := range out.All {
		all = append(all, summary(rd))
	}
	wantAll := []string{ // files in name order, lookups in the order made
		"ConfigMap default/settings found", "ConfigMap default/alpha found", "ConfigMap shared/global found",
		"ConfigMap default/*", "ConfigMap default/nope",
		"Deployment.apps default/web own found",
	}
	if diff := cmp.Diff(wantAll, all); diff != "" {
		t.Errorf("Output.All (-want +got):\n%s", diff)
	}
	if got := out.All[5].GVK; got != (schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) {
		t.Errorf("read GVK = %v, want the version the template named", got)
	}
	if c := dataOf(t, out.Children, "b", "color"); c != "green" {
		t.Errorf("ConfigMap b color = %q, want green", c)
	}
}

// A template that changes what it looked up changes neither the reader's
// object, nor the object recorded in the read, nor a later lookup's.
func TestLookupResultIsACopy(t *testing.T) {
	s := loadSet(t, map[string]string{config.File: lookupConfig, "out.yaml": `
{{- $cm := lookup "v1" "ConfigMap" .Namespace "settings" }}
{{- $_ := set $cm.data "color" "red" }}
{{- $again := lookup "v1" "ConfigMap" .Namespace "settings" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: out
data:
  first: {{ $cm.data.color }}
  again: {{ $again.data.color }}
`})
	reader := lookupReader(t)
	out, err := s.RenderWith(app(t, ""), reader)
	if err != nil {
		t.Fatalf("RenderWith: %v", err)
	}
	got := map[string]string{
		"first": dataOf(t, out.Children, "out", "first"),
		"again": dataOf(t, out.Children, "out", "again"),
	}
	if diff := cmp.Diff(map[string]string{"first": "red", "again": "blue"}, got); diff != "" {
		t.Errorf("rendered (-want +got):\n%s", diff)
	}
	for i, rd := range out.All {
		if c, _, _ := unstructured.NestedString(rd.Object, "data", "color"); c != "blue" {
			t.Errorf("read %d recorded color %q, want blue", i, c)
		}
	}
	live, err := reader.Get(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "default", "settings")
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := unstructured.NestedString(live, "data", "color"); c != "blue" {
		t.Errorf("the reader's object now has color %q, want blue", c)
	}
}

// needsClusterIP is a file that cannot render before the Service web has
// a clusterIP: it looks up the parent's own Service, so it is Deferred.
const needsClusterIP = `apiVersion: v1
kind: ConfigMap
metadata:
  name: endpoint
data:
  ip: {{ required "web has no clusterIP yet" (dig "spec" "clusterIP" "" (lookup "v1" "Service" .Namespace "web")) }}
`

const webService = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - port: 80
`

const liveService = `apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
  ownerReferences:
  - {apiVersion: example.com/v1, kind: App, name: web, uid: uid-1, controller: true}
spec:
  clusterIP: 10.0.0.7
  ports:
  - port: 80
`
