//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/test/env"
)

// lookupSet writes a template set for MyResource with the given loom.yaml
// tail (lookups) and files, and returns its root folder.
func lookupSet(t *testing.T, lookups string, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "lookup")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files["loom.yaml"] = env.Fixture(t, "sets/myresource/loom.yaml") + lookups
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.TrimLeft(text, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// appService and appDeployment are a Service and a Deployment named after
// the parent; the Deployment's pods ask for node pool .Spec.config.pool
// when it is set, which no node has.
const appService = `
apiVersion: v1
kind: Service
metadata:
  name: {{ .Name }}
spec:
  selector:
    app: {{ .Name }}
  ports:
    - port: 80
`

const appDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {{ .Name }}
  template:
    metadata:
      labels:
        app: {{ .Name }}
    spec:
      {{- with .Spec.config }}{{ with .pool }}
      nodeSelector:
        pool: {{ . | quote }}
      {{- end }}{{ end }}
      containers:
        - name: app
          image: {{ .Spec.image | quote }}
`

// waitReason waits until the parent's condition typ has status and reason,
// and its message holds every text.
func waitReason(t *testing.T, ns, name, typ, status, reason string, texts ...string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 60*time.Second, fmt.Sprintf("%s %s=%s (%s)", name, typ, status, reason), func(ctx context.Context) error {
		p, err := e.Get(ctx, myresGVR, ns, name)
		if err != nil {
			return err
		}
		st, r, msg := condition(p, typ)
		if st != status || r != reason || !containsAll(msg, texts) {
			return fmt.Errorf("%s=%s reason %s: %s", typ, st, r, msg)
		}
		return nil
	})
}

// A ConfigMap that reads its Deployment's status waits for the Deployment
// to be Available: never applied while it is not, the parent says what
// waits for what, and once the Deployment is Available the ConfigMap is
// created with the live value. A waiting ConfigMap that already exists is
// kept, not pruned.
func TestLookupWaitsForDependency(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	root := lookupSet(t, "", map[string]string{
		"service.yaml":    appService,
		"deployment.yaml": appDeployment,
		"configmap.yaml": `
{{- $d := lookup "apps/v1" "Deployment" .Namespace .Name }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-status
data:
  availableReplicas: {{ dig "status" "availableReplicas" 0 $d | toString | quote }}
`,
	})
	startLoom(t, root, ns, loomOptions{})
	createParent(t, ns, `
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata:
  name: app
spec:
  image: nginx:1.27
  config:
    pool: nowhere
`)
	waitReason(t, ns, "app", "Ready", "False", "WaitingForDependency", "ConfigMap app-status waits for Deployment app")
	waitReason(t, ns, "app", "Progressing", "True", "WaitingForDependency", "ConfigMap app-status waits for Deployment app")
	if _, err := e.Get(context.Background(), serviceGVR, ns, "app"); err != nil {
		t.Fatalf("the Service, which waits for nothing, was not applied: %v", err)
	}
	if _, err := e.Get(context.Background(), deployGVR, ns, "app"); err != nil {
		t.Fatalf("the Deployment, which waits for nothing, was not applied: %v", err)
	}
	// It stays away while the Deployment cannot become Available.
	time.Sleep(3 * time.Second)
	if _, err := e.Get(context.Background(), configMapGVR, ns, "app-status"); !isNotFound(err) {
		t.Fatalf("the waiting ConfigMap was applied: %v", err)
	}

	patchSpec(t, ns, "app", `{"spec":{"config":{"pool":null}}}`)
	eventually(t, 90*time.Second, "the ConfigMap carries the live availableReplicas", func(ctx context.Context) error {
		cm, err := e.Get(ctx, configMapGVR, ns, "app-status")
		if err != nil {
			return err
		}
		if v, _, _ := unstructured.NestedString(cm.Object, "data", "availableReplicas"); v != "1" {
			return fmt.Errorf("availableReplicas %q", v)
		}
		return nil
	})
	waitCondition(t, ns, "app", "Ready", "True")

	// A new rollout that cannot finish: the ConfigMap waits again, and its
	// object, which exists, is kept as it is.
	patchSpec(t, ns, "app", `{"spec":{"config":{"pool":"nowhere"}}}`)
	waitReason(t, ns, "app", "Ready", "False", "WaitingForDependency", "ConfigMap app-status waits for Deployment app")
	time.Sleep(3 * time.Second)
	cm, err := e.Get(context.Background(), configMapGVR, ns, "app-status")
	if err != nil {
		t.Fatalf("the waiting ConfigMap that existed was pruned: %v", err)
	}
	if cm.GetDeletionTimestamp() != nil {
		t.Fatalf("the waiting ConfigMap that existed is being deleted")
	}
}

// A ConfigMap that carries its Service's clusterIP, which the API server
// assigns, is created once, with the real address, in the reconcile that
// creates the Service.
func TestLookupServiceClusterIPCreatedOnce(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	root := lookupSet(t, "", map[string]string{
		"service.yaml": appService,
		"configmap.yaml": `
{{- $svc := lookup "v1" "Service" .Namespace .Name }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-address
data:
  address: {{ required "the Service has no clusterIP yet" (dig "spec" "clusterIP" "" $svc) | quote }}
`,
	})
	l := startLoom(t, root, ns, loomOptions{})
	createParent(t, ns, `
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata:
  name: app
spec:
  image: nginx:1.27
`)
	waitCondition(t, ns, "app", "Ready", "True")
	quiesce(t, 2*time.Second, func() float64 { n, _ := l.writes.snapshot(); return float64(n) })
	svc, err := e.Get(context.Background(), serviceGVR, ns, "app")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := e.Get(context.Background(), configMapGVR, ns, "app-address")
	if err != nil {
		t.Fatal(err)
	}
	ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP")
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "address"); got != ip || ip == "" {
		t.Fatalf("ConfigMap address %q, Service clusterIP %q", got, ip)
	}
	_, log := l.writes.snapshot()
	var cmWrites []string
	for _, w := range log {
		if strings.Contains(w, "/configmaps/app-address") {
			cmWrites = append(cmWrites, w)
		}
	}
	if len(cmWrites) != 1 {
		t.Fatalf("the ConfigMap was written %d times, want once: %v", len(cmWrites), cmWrites)
	}
}

// reconciles counts the "Reconciled" lines Loom logged for parent ns/name.
func reconciles(logs, ns, name string) int {
	re := regexp.MustCompile(`(?m)^INFO Reconciled .*parent="` + regexp.QuoteMeta(ns+"/"+name) + `"`)
	return len(re.FindAllString(logs, -1))
}

// A Deployment's env from a declared ConfigMap in another namespace: an
// edit of that ConfigMap reaches the Deployments of the 20 parents that read
// it within 10 s with no resync, and reconciles none of the 20 parents
// that do not read it. Deleting it fails the readers' render at the
// template's line; creating it again heals them.
func TestLookupOfExternalConfigMapIsWatched(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	const each = 20
	ns, platform := e.NewNamespace(t), e.NewNamespace(t)
	root := lookupSet(t, fmt.Sprintf("lookups:\n  - apiVersion: v1\n    kind: ConfigMap\n    namespaces: [%s]\n", platform), map[string]string{
		"deployment.yaml": fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {{ .Name }}
  template:
    metadata:
      labels:
        app: {{ .Name }}
    spec:
      containers:
        - name: app
          image: {{ .Spec.image | quote }}
          {{- if .Spec.config }}
          env:
            - name: REGION
              value: {{ required "the platform ConfigMap has no data.region" (dig "data" "region" "" (lookup "v1" "ConfigMap" %q "platform")) | quote }}
          {{- end }}
`, platform),
	})
	createObject(t, configMapGVR, platform, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\ndata:\n  region: eu-1\n")
	l := startLoom(t, root, ns, loomOptions{bufferLogs: true})
	for i := range each {
		createParent(t, ns, fmt.Sprintf("apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: reader-%d\nspec:\n  image: nginx:1.27\n  config:\n    read: \"yes\"\n", i))
		createParentAs(t, ns, "minimal", fmt.Sprintf("other-%d", i))
	}
	regions := func(ctx context.Context, want string) error {
		for i := range each {
			d, err := e.Get(ctx, deployGVR, ns, fmt.Sprintf("reader-%d", i))
			if err != nil {
				return err
			}
			cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			env, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "env")
			if len(env) != 1 || env[0].(map[string]any)["value"] != want {
				return fmt.Errorf("reader-%d env %v, want REGION=%s", i, env, want)
			}
		}
		return nil
	}
	eventually(t, 120*time.Second, "every reader has REGION=eu-1", func(ctx context.Context) error { return regions(ctx, "eu-1") })
	for i := range each {
		waitCondition(t, ns, fmt.Sprintf("other-%d", i), "Ready", "True")
	}
	quiesce(t, 3*time.Second, func() float64 { return l.counter(t, "loom_reconcile_total", nil) })
	mark := len(l.logs())

	patchObject(t, configMapGVR, platform, "platform", `{"data":{"region":"eu-2"}}`)
	eventually(t, 10*time.Second, "every reader has REGION=eu-2", func(ctx context.Context) error { return regions(ctx, "eu-2") })
	quiesce(t, 3*time.Second, func() float64 { return l.counter(t, "loom_reconcile_total", nil) })
	after := l.logs()[mark:]
	for i := range each {
		if n := reconciles(after, ns, fmt.Sprintf("other-%d", i)); n != 0 {
			t.Errorf("other-%d, which reads nothing, was reconciled %d times after the edit", i, n)
		}
		if n := reconciles(after, ns, fmt.Sprintf("reader-%d", i)); n == 0 {
			t.Errorf("reader-%d was not reconciled after the edit (the log check would pass for nothing)", i)
		}
	}

	if err := e.Kube.CoreV1().ConfigMaps(platform).Delete(context.Background(), "platform", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range each {
		waitDegraded(t, myresGVR, ns, fmt.Sprintf("reader-%d", i), "RenderFailed", "deployment.yaml:", "the platform ConfigMap has no data.region")
	}
	waitEvent(t, ns, "reader-0", "Warning", "RenderFailed", "deployment.yaml:")
	waitCondition(t, ns, "other-0", "Ready", "True")
	createObject(t, configMapGVR, platform, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\ndata:\n  region: eu-3\n")
	eventually(t, 30*time.Second, "every reader has REGION=eu-3", func(ctx context.Context) error { return regions(ctx, "eu-3") })
	for i := range each {
		waitCondition(t, ns, fmt.Sprintf("reader-%d", i), "Degraded", "False")
	}
}

// A lookup into a namespace the set did not declare, and a lookup of a
// kind it did not declare, are refused: the parent is Degraded at the
// template's line with an Event, nothing of it is applied, and another
// parent of the set is not affected.
func TestLookupRefusedOutsideDeclarations(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns, other := e.NewNamespace(t), e.NewNamespace(t)
	createObject(t, configMapGVR, other, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: secret-ish\ndata:\n  token: t0p\n")
	createObject(t, configMapGVR, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  a: b\n")
	root := lookupSet(t, "lookups:\n  - apiVersion: v1\n    kind: ConfigMap\n", map[string]string{
		"configmap.yaml": fmt.Sprintf(`
{{- $v := "" }}
{{- if eq (dig "read" "" .Spec.config) "other-namespace" }}
{{- $v = dig "data" "token" "" (lookup "v1" "ConfigMap" %q "secret-ish") }}
{{- else if eq (dig "read" "" .Spec.config) "secret" }}
{{- $v = dig "data" "token" "" (lookup "v1" "Secret" .Namespace "shared") }}
{{- else }}
{{- $v = dig "data" "a" "" (lookup "v1" "ConfigMap" .Namespace "shared") }}
{{- end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-copy
data:
  value: {{ $v | quote }}
`, other),
	})
	startLoom(t, root, ns, loomOptions{admin: true}) // Loom must read the undeclared kind to refuse it; with the generated RBAC it may not, and says so
	for _, p := range []struct{ name, read string }{{"good", "local"}, {"foreign", "other-namespace"}, {"undeclared", "secret"}} {
		createParent(t, ns, fmt.Sprintf("apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: %s\nspec:\n  image: nginx:1.27\n  config:\n    read: %s\n", p.name, p.read))
	}
	waitDegraded(t, myresGVR, ns, "foreign", "RenderFailed", "configmap.yaml:3", "lookup refused", fmt.Sprintf("namespace %q", other))
	waitEvent(t, ns, "foreign", "Warning", "RenderFailed", "lookup refused")
	waitDegraded(t, myresGVR, ns, "undeclared", "RenderFailed", "configmap.yaml:5", "lookup refused", "Secret", "not declared")
	waitEvent(t, ns, "undeclared", "Warning", "RenderFailed", "lookup refused")
	waitCondition(t, ns, "good", "Ready", "True")
	cm, err := e.Get(context.Background(), configMapGVR, ns, "good-copy")
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "value"); v != "b" {
		t.Fatalf("good-copy value %q, want b", v)
	}
	for _, name := range []string{"foreign-copy", "undeclared-copy"} {
		if _, err := e.Get(context.Background(), configMapGVR, ns, name); !isNotFound(err) {
			t.Fatalf("%s was applied from a refused lookup: %v", name, err)
		}
	}
}

// Two ConfigMaps that look each other up can never be created first: the
// parent is Degraded with DependencyCycle naming both, and neither is
// applied, while a third child is.
func TestLookupDependencyCycle(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	cm := func(name, reads string) string {
		return fmt.Sprintf(`
{{- $o := lookup "v1" "ConfigMap" .Namespace (printf "%%s-%s" .Name) }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-%s
data:
  other: {{ dig "metadata" "name" "none" $o | quote }}
`, reads, name)
	}
	root := lookupSet(t, "", map[string]string{"a.yaml": cm("a", "b"), "b.yaml": cm("b", "a"), "service.yaml": appService})
	startLoom(t, root, ns, loomOptions{})
	createParentAs(t, ns, "minimal", "app")
	waitDegraded(t, myresGVR, ns, "app", "DependencyCycle", "ConfigMap app-a", "ConfigMap app-b")
	waitEvent(t, ns, "app", "Warning", "DependencyCycle", "ConfigMap app-a")
	if _, err := e.Get(context.Background(), serviceGVR, ns, "app"); err != nil {
		t.Fatalf("the Service, outside the cycle, was not applied: %v", err)
	}
	for _, name := range []string{"app-a", "app-b"} {
		if _, err := e.Get(context.Background(), configMapGVR, ns, name); !isNotFound(err) {
			t.Fatalf("%s, in the cycle, was applied: %v", name, err)
		}
	}
}

// getCounter counts the GET requests of single objects whose path holds
// one of the given parts.
type getCounter struct {
	next  http.RoundTripper
	parts []string
	n     *atomic.Int64
}

func (g *getCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Query().Get("watch") == "" {
		for _, p := range g.parts {
			if strings.Contains(r.URL.Path, p) {
				g.n.Add(1)
			}
		}
	}
	return g.next.RoundTrip(r)
}

// With lookups that find what they read (a parent's own Service, and a
// declared ConfigMap), full resyncs of a converged fleet send no write and
// no read: what was read is served from Loom's caches while its
// resourceVersion stands.
func TestLookupSteadyStateIsSilent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	const parents = 10
	ns := e.NewNamespace(t)
	createObject(t, configMapGVR, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\ndata:\n  region: eu-1\n")
	root := lookupSet(t, "lookups:\n  - apiVersion: v1\n    kind: ConfigMap\n", map[string]string{
		"service.yaml": appService,
		"configmap.yaml": `
{{- $svc := lookup "v1" "Service" .Namespace .Name }}
{{- $platform := lookup "v1" "ConfigMap" .Namespace "platform" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-address
data:
  address: {{ required "the Service has no clusterIP yet" (dig "spec" "clusterIP" "" $svc) | quote }}
  region: {{ required "no region" (dig "data" "region" "" $platform) | quote }}
`,
	})
	var gets atomic.Int64
	l := startLoom(t, root, ns, loomOptions{resync: 2 * time.Second, transport: func(rt http.RoundTripper) http.RoundTripper {
		return &getCounter{next: rt, parts: []string{"/configmaps/platform", "/services/"}, n: &gets}
	}})
	for i := range parents {
		createParentAs(t, ns, "minimal", fmt.Sprintf("app-%d", i))
	}
	for i := range parents {
		waitCondition(t, ns, fmt.Sprintf("app-%d", i), "Ready", "True")
	}
	quiesce(t, 3*time.Second, func() float64 { n, _ := l.writes.snapshot(); return float64(n) + float64(gets.Load()) })
	if gets.Load() == 0 {
		t.Fatalf("no GET of a looked-up object was counted: the check below would pass for nothing")
	}
	l.writes.reset()
	gets.Store(0)
	before := l.counter(t, "loom_reconcile_total", nil)
	eventually(t, 60*time.Second, "two full resyncs", func(context.Context) error {
		if n := l.counter(t, "loom_reconcile_total", nil) - before; n < 2*parents {
			return fmt.Errorf("%v reconciles, want %d", n, 2*parents)
		}
		return nil
	})
	writes, log := l.writes.snapshot()
	if writes != 0 || gets.Load() != 0 {
		t.Fatalf("full resyncs sent %d writes and %d GETs of looked-up objects; writes: %v", writes, gets.Load(), log)
	}
}
