package render

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/hook"
	"github.com/loom-operator/loom/engine/object"
	"helm.sh/helm/v4/pkg/chart/common"
	cutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const webChartSet = "testdata/chartsets/web"

// helmObjects is what `helm install` would create for the chart: Helm's
// SDK renders it (loader, ProcessDependencies, ToRenderValues,
// engine.Render), SortManifests splits manifests from hooks, and test
// hooks are left out. Objects are keyed by kind/name.
func helmObjects(t *testing.T, dir string, values map[string]any, name, namespace string, revision int) map[string]map[string]any {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := chartutil.ProcessDependencies(ch, values); err != nil {
		t.Fatal(err)
	}
	top, err := cutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: name, Namespace: namespace, Revision: revision, IsInstall: revision == 1, IsUpgrade: revision > 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		t.Fatal(err)
	}
	for f := range files {
		if strings.HasSuffix(f, "NOTES.txt") {
			delete(files, f)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, m := range manifests {
		docs = append(docs, m.Content)
	}
	for _, h := range hooks {
		// Loom applies install hooks on the install and upgrade hooks on
		// an upgrade, as Helm runs them; never test, delete or rollback
		// ones.
		applied := false
		for _, e := range h.Events {
			switch e {
			case "pre-install", "post-install":
				applied = applied || revision == 1
			case "pre-upgrade", "post-upgrade":
				applied = applied || revision > 1
			}
		}
		if applied {
			docs = append(docs, h.Manifest)
		}
	}
	out := map[string]map[string]any{}
	for _, d := range docs {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			t.Fatal(err)
		}
		if len(obj) == 0 {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		out[u.GetKind()+"/"+u.GetName()] = jsonRoundTrip(t, obj)
	}
	return out
}

// jsonRoundTrip gives numbers one type (float64) on both sides.
func jsonRoundTrip(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// withoutLoomMarks removes what Loom adds to every child of a chart set
// (docs/how-to/charts.md): the parent's namespace where the chart set
// none, the controller ownerReference and the ApplySet and managed-by
// labels. managed-by is .Release.Service, which is "loom" under Loom.
func withoutLoomMarks(t *testing.T, obj map[string]any, namespace string) map[string]any {
	t.Helper()
	u := unstructured.Unstructured{Object: jsonRoundTrip(t, obj)}
	if u.GetNamespace() != namespace {
		t.Errorf("%s/%s: namespace %q, want the parent's %q", u.GetKind(), u.GetName(), u.GetNamespace(), namespace)
	}
	if len(u.GetOwnerReferences()) != 1 {
		t.Errorf("%s/%s: want one ownerReference, got %v", u.GetKind(), u.GetName(), u.GetOwnerReferences())
	}
	meta := u.Object["metadata"].(map[string]any)
	delete(meta, "ownerReferences")
	labels, _ := meta["labels"].(map[string]any)
	delete(labels, object.LabelPartOf)
	if labels[object.LabelManagedBy] != object.ManagedByValue {
		t.Errorf("%s/%s: %s is %v", u.GetKind(), u.GetName(), object.LabelManagedBy, labels[object.LabelManagedBy])
	}
	delete(labels, object.LabelManagedBy)
	if len(labels) == 0 {
		delete(meta, "labels")
	}
	if ann, ok := meta["annotations"].(map[string]any); ok {
		if _, hooked := ann["helm.sh/hook"]; hooked != (ann[hook.AnnotationRevision] != nil) {
			t.Errorf("%s/%s: %s is %v", u.GetKind(), u.GetName(), hook.AnnotationRevision, ann[hook.AnnotationRevision])
		}
		delete(ann, hook.AnnotationRevision)
	}
	return u.Object
}

// helmMarksOff removes from Helm's object what Loom sets otherwise: the
// namespace where the chart set none, and managed-by: Helm.
func helmMarksOff(obj map[string]any) map[string]any {
	meta := obj["metadata"].(map[string]any)
	delete(meta, "namespace")
	if labels, ok := meta["labels"].(map[string]any); ok {
		if labels[object.LabelManagedBy] == "Helm" {
			delete(labels, object.LabelManagedBy)
		}
		if len(labels) == 0 {
			delete(meta, "labels")
		}
	}
	return obj
}

func webApp(name, namespace string, generation int64, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1",
		"kind":       "WebApp",
		"metadata": map[string]any{
			"name": name, "namespace": namespace, "uid": "u-" + name, "generation": generation,
		},
		"spec": spec,
	}}
	return u
}

// TestChartSetAgreesWithHelm renders the web chart as a set and compares
// each child with the object Helm would install, apart from Loom's marks.
func TestChartSetAgreesWithHelm(t *testing.T) {
	set, err := Load(webChartSet)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		gen    int64
		rev    int64 // the release's revision; 1 (the install) by default
		values string
	}{
		{name: "defaults", gen: 1},
		{name: "upgrade", gen: 4, rev: 4, values: `{replicaCount: 7, bigNumber: 20000000, ingress: {enabled: true}}`},
		{name: "subcharts off", gen: 1, values: `{db: {enabled: false}, redis: {enabled: false}, tags: {extras: true}, hooks: {migrate: false}}`},
		{name: "lists and maps", gen: 2, values: `{extraEnv: [{name: A, value: 1}, {name: B, value: "x"}], podLabels: {a: b}, resources: {limits: {cpu: 1}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The parent's spec holds integers as int64, as an informer's
			// object does; Helm reads the same YAML as float64.
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(or(tt.values, "{}")), &spec); err != nil {
				t.Fatal(err)
			}
			specInt := unstructured.Unstructured{Object: map[string]any{}}
			if err := specInt.UnmarshalJSON(mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "X", "spec": spec})); err != nil {
				t.Fatal(err)
			}
			parent := webApp("shop", "team-a", tt.gen, specInt.Object["spec"].(map[string]any))
			rev := max(tt.rev, 1)
			if rev > 1 {
				// The parent's status records the revision before, of
				// another spec: this render is the next revision.
				parent.Object["status"] = map[string]any{"release": map[string]any{"revision": rev - 1, "digest": "earlier"}}
			}
			out, err := set.RenderWith(parent, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]map[string]any{}
			for _, c := range out.Children {
				got[c.GetKind()+"/"+c.GetName()] = withoutLoomMarks(t, c.Object, "team-a")
			}
			helmValues := map[string]any{}
			if err := yaml.Unmarshal([]byte(or(tt.values, "{}")), &helmValues); err != nil {
				t.Fatal(err)
			}
			want := helmObjects(t, filepath.Join(webChartSet, "chart"), helmValues, "shop", "team-a", int(rev))
			for k, o := range want {
				want[k] = helmMarksOff(o)
			}
			for k, o := range got {
				got[k] = helmMarksOff(o)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("children differ from Helm's objects (-helm +loom):\n%s", diff)
			}
			if _, ok := got["Pod/shop-web-test-connection"]; ok {
				t.Error("a test hook was rendered as a child")
			}
		})
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChartSetKinds lists what the web chart renders, so that a change in
// what the differential test covers is seen.
func TestChartSetKinds(t *testing.T) {
	set, err := Load(webChartSet)
	if err != nil {
		t.Fatal(err)
	}
	out, err := set.Render(webApp("shop", "team-a", 1, map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range out {
		got = append(got, fmt.Sprintf("%s/%s", c.GetKind(), c.GetName()))
	}
	sort.Strings(got)
	want := []string{
		"ConfigMap/shop-redis", "ConfigMap/shop-web-files", "ConfigMap/shop-web-installed", "CronJob/shop-backup", "Deployment/shop-web",
		"Job/shop-web-early", "Job/shop-web-migrate", "Secret/shop-web-files", "Service/shop-metrics", "Service/shop-web", "StatefulSet/shop-db",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
}

// TestChartSetLookupIsReadEachRender renders a chart whose template looks
// up a Secret, twice with the same parent: the second render must read
// the Secret again (Loom keeps a chart's output only for renders that
// made no lookup), see it, and record the read.
func TestChartSetLookupIsReadEachRender(t *testing.T) {
	set, err := Load(webChartSet)
	if err != nil {
		t.Fatal(err)
	}
	parent := webApp("shop", "team-a", 1, map[string]any{})
	annotation := func(out *Output) string {
		for _, c := range out.Children {
			if c.GetKind() == "Deployment" {
				return c.GetAnnotations()["lookup"]
			}
		}
		return ""
	}
	first, err := set.RenderWith(parent, NewObjectsReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "missing", "namespace": "team-a"},
		"data":     map[string]any{"k": "dg=="},
	}}
	second, err := set.RenderWith(parent, NewObjectsReader([]*unstructured.Unstructured{secret}))
	if err != nil {
		t.Fatal(err)
	}
	if got := annotation(first); got != "0" {
		t.Errorf("first render, no Secret: lookup annotation %q, want 0", got)
	}
	if got := annotation(second); got != "4" {
		t.Errorf("second render, with the Secret: lookup annotation %q, want 4 (its keys)", got)
	}
	found := false
	for _, rd := range second.All {
		found = found || (rd.GVK.Kind == "Secret" && rd.Name == "missing" && rd.Object != nil)
	}
	if !found {
		t.Errorf("second render's reads lack the Secret: %v", second.All)
	}
}
