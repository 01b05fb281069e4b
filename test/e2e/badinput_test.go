//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/test/env"
)

// The bad-input matrix: malformed templates, bad specs and malformed
// loom.yaml files, each run against the real API server by a Loom of its
// own, in a namespace of its own, beside a good parent. The rows are in
// badinput_cases_test.go.

// setKind is the template set a case's Loom runs.
type setKind int

const (
	// myResourceSet is a copy of the shipped MyResource set.
	myResourceSet setKind = iota
	// widgetSet renders a Widget's spec into its children as it is, so
	// that values a child refuses reach the API server. Its CRD takes any
	// spec.
	widgetSet
)

// badCase is one row of the matrix.
type badCase struct {
	name string
	set  setKind
	// files are written into the set's folder before Loom starts.
	files map[string]string
	// spec is the bad parent's spec as JSON (goodSpec by default); parent
	// is its name ("bad" by default). The good parent is always "good".
	spec, parent string

	// One of three outcomes is expected:
	//  - reason (with texts): the bad parent is Degraded for reason, with
	//    a message holding texts and, when at is set, the file:line of at;
	//    a Warning Event says the same;
	//  - refused: the API server refuses to create the bad parent, with an
	//    error holding this text, and Loom never sees it;
	//  - breakSet: after the good parent is Ready, these files are written
	//    and the set no longer loads: a TemplateSetInvalid Warning Event on
	//    the parent kind's CRD holds texts (and at), and the last good
	//    version of the set keeps reconciling.
	reason  string
	refused string
	texts   []string
	at      location
	// alsoReady: the bad parent still becomes Ready (a status template
	// failure degrades only the status).
	alsoReady bool
	breakSet  map[string]string
	// brokenSet is a second set, in a folder of its own, that fails to
	// load from the start. Loom says so only in its log (there is no
	// good version, so no controller and no CRD to put an Event on); the
	// row checks that it keeps running the good set.
	brokenSet map[string]string
}

// location is where a case's error must point: the first line of file,
// in the set's folder, that holds needle.
type location struct{ file, needle string }

// expect is texts, after the "file:line" of loc in the set's folder dir
// when loc is set.
func (loc location) expect(t *testing.T, dir string, texts []string) []string {
	t.Helper()
	if loc.file == "" {
		return texts
	}
	return append([]string{fmt.Sprintf("%s:%d", loc.file, lineOf(t, filepath.Join(dir, loc.file), loc.needle))}, texts...)
}

// maxConcurrentCases bounds how many Looms the matrix runs at once.
const maxConcurrentCases = 24

// TestBadInputMatrix runs every row of the bad-input matrix. For each: the
// bad input is reported (a Degraded condition and a Warning Event that name
// the cause, with file:line for template errors; or the API server's
// refusal; or a TemplateSetInvalid Event on the CRD), Loom keeps running,
// and a good parent of the same Loom becomes and stays Ready.
func TestBadInputMatrix(t *testing.T) {
	t.Parallel()
	group := fmt.Sprintf("badinput%d.loom.dev", rand.Uint32())
	installTestCRD(t, group, "Widget", "widgets")
	cases := concatCases(templateCases(), statusTemplateCases(), specCases(), setCases())
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("two cases are named %q", tc.name)
		}
		seen[tc.name] = true
	}
	if len(cases) < 30 {
		t.Fatalf("the matrix has %d cases, want at least 30", len(cases))
	}
	// The cases are run at once, from goroutines (t.Run allows it): with
	// t.Parallel they would run -parallel (GOMAXPROCS, 2 here) at a time,
	// and each spends most of its time waiting for the cluster.
	start := time.Now()
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxConcurrentCases)
	for _, tc := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			t.Run(tc.name, func(t *testing.T) { runBadCase(t, group, tc) })
		}()
	}
	wg.Wait()
	t.Logf("%d cases in %v", len(cases), time.Since(start).Round(time.Second))
}

func concatCases(lists ...[]badCase) []badCase {
	var out []badCase
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// runBadCase runs one row: see badCase for what is expected. Whatever
// the row, Loom must keep running, the good parent must stay Ready (its
// Ready condition does not transition) and Degraded=False, and a change
// to the good parent made after the bad input must still be applied.
func runBadCase(t *testing.T, group string, tc badCase) {
	e := env.From(t)
	ns := e.NewNamespace(t)
	kind := newParentKind(t, group, tc.set)
	dir := kind.templates(t)
	setDir := kind.setDir(dir)
	writeFiles(t, setDir, tc.files)
	if tc.brokenSet != nil {
		writeFiles(t, filepath.Join(dir, "broken"), tc.brokenSet)
	}
	l := startLoom(t, dir, ns, loomOptions{quiet: true})
	kind.create(t, ns, "good", goodSpec)
	waitConditionGVR(t, kind.gvr, ns, "good", "Ready", "True")
	readySince := readyTransition(t, kind.gvr, ns, "good")

	switch {
	case tc.brokenSet != nil:
		// Nothing to wait for: the checks below are the whole row.
	case tc.refused != "":
		_, err := kind.tryCreate(e, ns, tc.badName(), tc.badSpec())
		if err == nil || !strings.Contains(err.Error(), tc.refused) {
			t.Fatalf("create the bad parent: err = %v, want the API server to refuse it with %q", err, tc.refused)
		}
	case tc.breakSet != nil:
		writeFiles(t, setDir, tc.breakSet)
		waitEvent(t, "default", kind.crd, "Warning", "TemplateSetInvalid", tc.at.expect(t, setDir, append([]string{setDir}, tc.texts...))...)
		// The last good version still renders a parent created now.
		kind.create(t, ns, "late", goodSpec)
		waitConditionGVR(t, kind.gvr, ns, "late", "Ready", "True")
	default:
		kind.create(t, ns, tc.badName(), tc.badSpec())
		texts := tc.at.expect(t, setDir, tc.texts)
		waitDegraded(t, kind.gvr, ns, tc.badName(), tc.reason, texts...)
		waitEvent(t, ns, tc.badName(), "Warning", tc.reason, texts...)
		if tc.alsoReady {
			waitConditionGVR(t, kind.gvr, ns, tc.badName(), "Ready", "True")
		}
	}

	l.mustBeRunning(t)
	waitConditionGVR(t, kind.gvr, ns, "good", "Degraded", "False")
	if got := readyTransition(t, kind.gvr, ns, "good"); got != readySince {
		t.Errorf("the good parent's Ready condition changed at %s (it became Ready at %s); its Events: %s", got, readySince, eventSummary(e, ns, "good"))
	}
	patchObject(t, kind.gvr, ns, "good", `{"spec":{"replicas":2}}`)
	waitReplicas(t, ns, "good", 2)
}

// readyTransition returns when a parent's Ready condition last changed,
// failing unless it is True.
func readyTransition(t *testing.T, gvr schema.GroupVersionResource, ns, name string) string {
	t.Helper()
	e := env.From(t)
	p, err := e.Get(context.Background(), gvr, ns, name)
	if err != nil {
		t.Fatalf("get %s/%s: %v", ns, name, err)
	}
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" && m["status"] == "True" {
			since, _ := m["lastTransitionTime"].(string)
			return since
		}
	}
	t.Fatalf("%s/%s is not Ready: %v", ns, name, conds)
	return ""
}

// goodSpec is the spec of the good parents, and of a bad parent whose
// case names none.
const goodSpec = `{"image":"nginx:1.27"}`

// badSpec is the bad parent's spec.
func (tc badCase) badSpec() string {
	if tc.spec == "" {
		return goodSpec
	}
	return tc.spec
}

// badName is the bad parent's name.
func (tc badCase) badName() string {
	if tc.parent != "" {
		return tc.parent
	}
	return "bad"
}

// parentKind is the parent kind of a case, with its template set.
type parentKind struct {
	set setKind
	gvr schema.GroupVersionResource
	// crd is the CRD's name, which TemplateSetInvalid Events are about.
	crd string
}

func newParentKind(t *testing.T, group string, set setKind) parentKind {
	t.Helper()
	switch set {
	case widgetSet:
		return parentKind{set: set, gvr: schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}, crd: "widgets." + group}
	default:
		return parentKind{set: set, gvr: myresGVR, crd: "myresources.example.loom.dev"}
	}
}

// templates writes the kind's template set into a new folder, and returns
// the folder that Loom is to watch.
func (k parentKind) templates(t *testing.T) string {
	t.Helper()
	if k.set == myResourceSet {
		return copyTemplates(t)
	}
	dir := t.TempDir()
	writeFiles(t, k.setDir(dir), widgetTemplates(k.gvr.GroupVersion().String()))
	return dir
}

// setDir is the set's own folder under the folder Loom watches.
func (k parentKind) setDir(dir string) string {
	if k.set == myResourceSet {
		return filepath.Join(dir, "myresource")
	}
	return filepath.Join(dir, "widget")
}

// tryCreate creates a parent of the kind with spec (JSON).
func (k parentKind) tryCreate(e *env.Env, ns, name, spec string) (*unstructured.Unstructured, error) {
	kind := "MyResource"
	if k.set == widgetSet {
		kind = "Widget"
	}
	manifest := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q},"spec":%s}`,
		k.gvr.GroupVersion().String(), kind, name, spec)
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		return nil, fmt.Errorf("parse parent %s: %w", name, err)
	}
	return e.Dyn.Resource(k.gvr).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
}

// create creates a parent of the kind with spec (JSON).
func (k parentKind) create(t *testing.T, ns, name, spec string) {
	t.Helper()
	e := env.From(t)
	if _, err := k.tryCreate(e, ns, name, spec); err != nil {
		t.Fatalf("create %s %s/%s: %v", k.gvr.Resource, ns, name, err)
	}
}

// widgetTemplates is a set that puts a Widget's spec into its children
// without checking it, as a careless set would: a Deployment (replicas,
// image, memory, a tier label), a Service (port) and a ConfigMap (config).
func widgetTemplates(apiVersion string) map[string]string {
	return map[string]string{
		"loom.yaml": "parent:\n  apiVersion: " + apiVersion + "\n  kind: Widget\n",
		"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
  labels:
    tier: {{ .Spec.tier | default "web" | quote }}
spec:
  replicas: {{ .Spec.replicas | default 1 }}
  selector:
    matchLabels: {app: {{ .Name | quote }}}
  template:
    metadata:
      labels: {app: {{ .Name | quote }}}
    spec:
      containers:
        - name: app
          image: {{ required "spec.image is required" .Spec.image | quote }}
          resources:
            requests:
              memory: {{ .Spec.memory | default "64Mi" }}
`,
		"service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Name }}
spec:
  selector: {app: {{ .Name | quote }}}
  ports:
    - port: {{ .Spec.port | default 8080 }}
`,
		"configmap.yaml": `{{- if .Spec.config }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-config
data:
  {{- range $key, $value := .Spec.config }}
  {{ $key }}: {{ $value | quote }}
  {{- end }}
{{- end }}
`,
	}
}

// eventSummary lists the Events on an object, for a failure message.
func eventSummary(e *env.Env, ns, name string) string {
	evs, err := e.Events(context.Background(), ns, name)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s %s %s: %.300s", e.LastTimestamp.Format("15:04:05"), e.Type, e.Reason, e.Message))
	}
	return strings.Join(out, "; ")
}
