//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/test/env"
)

// rolloutFiles are a set whose children carry the version that the
// partial _version.tpl defines: a ConfigMap with that version and the
// parent's spec.config.value, and a Deployment whose pods carry it as an
// annotation and, when _version.tpl defines "pool", ask for that node
// pool, which no node has.
var rolloutFiles = map[string]string{
	"configmap.yaml": `
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}
data:
  version: {{ include "version" . | quote }}
  value: {{ get (.Spec.config | default dict) "value" | quote }}
`,
	"deployment.yaml": `
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
      annotations:
        loom-test/version: {{ include "version" . | quote }}
    spec:
      {{- with include "pool" . }}
      nodeSelector:
        pool: {{ . | quote }}
      {{- end }}
      containers:
        - name: app
          image: {{ .Spec.image | quote }}
`,
}

// version is a _version.tpl: the version, and a node pool ("" for none).
func version(v, pool string) string {
	return fmt.Sprintf("{{- define \"version\" }}%s{{ end }}\n{{- define \"pool\" }}%s{{ end }}\n", v, pool)
}

// rolloutSet writes a set "app" for MyResource with the rollout block
// policy and _version.tpl at v, and returns the root and the set's folder.
func rolloutSet(t *testing.T, policy, v string) (string, string) {
	t.Helper()
	files := map[string]string{"_version.tpl": version(v, "")}
	for n, f := range rolloutFiles {
		files[n] = f
	}
	root := t.TempDir()
	dir := filepath.Join(root, "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files["loom.yaml"] = env.Fixture(t, "sets/myresource/loom.yaml") + policy
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.TrimLeft(text, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, dir
}

// setVersion rewrites _version.tpl in one rename, so that the watcher
// sees one edit.
func setVersion(t *testing.T, dir, v, pool string) {
	t.Helper()
	tmp := filepath.Join(dir, ".version.tmp")
	if err := os.WriteFile(tmp, []byte(version(v, pool)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "_version.tpl")); err != nil {
		t.Fatal(err)
	}
}

// fleet creates n parents named p-0.. in ns; those in canary are labelled
// loom.dev/canary.
func fleet(t *testing.T, ns string, n int, canary ...int) {
	t.Helper()
	for i := range n {
		labels := ""
		for _, c := range canary {
			if c == i {
				labels = "\n  labels:\n    loom.dev/canary: \"true\""
			}
		}
		createParent(t, ns, fmt.Sprintf("apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: p-%d%s\nspec:\n  image: nginx:1.27\n", i, labels))
	}
}

// rolloutState is what the tests read of a TemplateSet's status.
type rolloutState struct {
	stable, candidate, rejected, phase, failedParent, message string
	step, moved                                               int64
}

func readRollout(ctx context.Context, e *env.Env, name string) (rolloutState, error) {
	ts, err := e.Get(ctx, v1alpha1.TemplateSetGVR, "", name)
	if err != nil {
		return rolloutState{}, err
	}
	s := func(f string) string { v, _, _ := unstructured.NestedString(ts.Object, "status", f); return v }
	step, _, _ := unstructured.NestedInt64(ts.Object, "status", "step")
	moved, _, _ := unstructured.NestedInt64(ts.Object, "status", "parents", "moved")
	return rolloutState{stable: s("stableRevision"), candidate: s("candidateRevision"), rejected: s("rejectedRevision"),
		phase: s("phase"), failedParent: s("failedParent"), message: s("message"), step: step, moved: moved}, nil
}

func waitRollout(t *testing.T, name, what string, timeout time.Duration, ok func(rolloutState) bool) rolloutState {
	t.Helper()
	e := env.From(t)
	var last rolloutState
	eventually(t, timeout, what, func(ctx context.Context) error {
		s, err := readRollout(ctx, e, name)
		if err != nil {
			return err
		}
		last = s
		if !ok(s) {
			return fmt.Errorf("TemplateSet %s: %+v", name, s)
		}
		return nil
	})
	return last
}

// children returns each parent's ConfigMap version and Deployment's pool
// and generation, by parent name.
type childView struct {
	version, pool, value string
	generation           int64
}

func childrenOf(ctx context.Context, e *env.Env, ns string) (map[string]childView, error) {
	out := map[string]childView{}
	cms, err := e.Dyn.Resource(configMapGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, cm := range cms.Items {
		if !strings.HasPrefix(cm.GetName(), "p-") {
			continue
		}
		v := out[cm.GetName()]
		v.version, _, _ = unstructured.NestedString(cm.Object, "data", "version")
		v.value, _, _ = unstructured.NestedString(cm.Object, "data", "value")
		out[cm.GetName()] = v
	}
	ds, err := e.Dyn.Resource(deployGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range ds.Items {
		v := out[d.GetName()]
		v.pool, _, _ = unstructured.NestedString(d.Object, "spec", "template", "spec", "nodeSelector", "pool")
		v.generation = d.GetGeneration()
		out[d.GetName()] = v
	}
	return out, nil
}

// waitFleet waits until every parent of ns is Ready on revision rev with
// version v in its ConfigMap.
func waitFleet(t *testing.T, ns string, n int, rev, v string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 120*time.Second, fmt.Sprintf("%d parents Ready on %s (%s)", n, rev, v), func(ctx context.Context) error {
		kids, err := childrenOf(ctx, e, ns)
		if err != nil {
			return err
		}
		for i := range n {
			name := fmt.Sprintf("p-%d", i)
			p, err := e.Get(ctx, myresGVR, ns, name)
			if err != nil {
				return err
			}
			got, _, _ := unstructured.NestedString(p.Object, "status", "templateRevision")
			if st, _, msg := condition(p, "Ready"); st != "True" || got != rev || kids[name].version != v {
				return fmt.Errorf("%s: Ready=%s (%s), revision %q, version %q", name, st, msg, got, kids[name].version)
			}
		}
		return nil
	})
}

// startRollout runs Loom over a set "app" with the rollout block policy at
// version v1, creates n parents (those in canary labelled canary), and
// waits until they are all Ready on the first revision. It returns the
// namespace, the set's folder, the TemplateSet's name and its state.
func startRollout(t *testing.T, policy string, n int, canary ...int) (*loom, string, string, string, rolloutState) {
	t.Helper()
	e := env.From(t)
	ns := e.NewNamespace(t)
	root, dir := rolloutSet(t, policy, "v1")
	l := startLoom(t, root, ns, loomOptions{quiet: true})
	name := "app." + ns
	fleet(t, ns, n, canary...)
	first := waitRollout(t, name, "a stable revision", 60*time.Second, func(s rolloutState) bool { return s.stable != "" && s.phase == "Complete" })
	waitFleet(t, ns, n, first.stable, "v1")
	return l, ns, dir, name, first
}

// A good edit reaches 20 parents in the policy's three steps, in order,
// canary first: at no moment has a parent the new children before its step
// started.
func TestRolloutGoodEditInSteps(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	const n = 20
	l, ns, dir, name, first := startRollout(t, "rollout:\n  steps: [1, 25%, 100%]\n  readyTimeout: 90s\n  soak: 3s\n", n, 7)

	setVersion(t, dir, "v2", "")
	allowed := map[int64]int{1: 1, 2: 5, 3: n}
	gauge := map[float64]bool{} // loom_rollout_step values seen
	setLabel := map[string]string{"set": name}
	steps, order := followRollout(t, ns, name, n, first, allowed, func() {
		gauge[l.counter(t, "loom_rollout_step", setLabel)] = true
	})
	if want := []int64{1, 2, 3}; fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("steps seen %v, want %v", steps, want)
	}
	if len(order) == 0 || order[0] != "p-7" {
		t.Errorf("the canary p-7 must move first; order %v", order)
	}
	final, _ := readRollout(context.Background(), e, name)
	waitFleet(t, ns, n, final.stable, "v2")
	if !gauge[1] || !gauge[2] || !gauge[3] {
		t.Errorf("loom_rollout_step showed %v; want steps 1, 2 and 3 among them", gauge)
	}
	stable := l.counter(t, "loom_rollout_parents", map[string]string{"set": name, "revision": "stable"})
	candidate := l.counter(t, "loom_rollout_parents", map[string]string{"set": name, "revision": "candidate"})
	if step := l.counter(t, "loom_rollout_step", setLabel); step != 0 || stable != n || candidate != 0 {
		t.Errorf("after the rollout: loom_rollout_step %v, parents stable %v, candidate %v; want 0, %d, 0", step, stable, candidate, n)
	}
}

// followRollout watches a rollout of n parents p-0.. in ns, from first,
// until it completes: at no moment may more parents have the new children
// (version v2) than allowed says for the step; each is called every look.
// It returns the steps seen and the order in which parents moved.
func followRollout(t *testing.T, ns, name string, n int, first rolloutState, allowed map[int64]int, each func()) ([]int64, []string) {
	t.Helper()
	e := env.From(t)
	var steps []int64
	var order []string
	seen := map[string]bool{}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if each != nil {
			each()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		kids, err := childrenOf(ctx, e, ns)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		s, err := readRollout(ctx, e, name)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		moved := 0
		for i := range n {
			p := fmt.Sprintf("p-%d", i)
			if kids[p].version == "v2" {
				moved++
				if !seen[p] {
					seen[p] = true
					order = append(order, p)
				}
			}
		}
		if s.candidate != "" {
			if len(steps) == 0 || steps[len(steps)-1] != s.step {
				steps = append(steps, s.step)
			}
			if moved > allowed[s.step] {
				t.Fatalf("at step %d, %d parents have the new children; at most %d may", s.step, moved, allowed[s.step])
			}
		}
		if s.phase == "Complete" && s.stable != first.stable {
			return steps, order
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout did not complete: %+v, steps seen %v", s, steps)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A bad edit (pods that ask for a node pool no node has, so the Deployment
// never becomes Available) fails the first step after readyTimeout. With
// onFailure: rollback the moved parent gets its old children back, the
// other 19 are never touched, and a Warning Event names the parent.
func TestRolloutBadEditRollsBack(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	const n = 20
	_, ns, dir, name, first := startRollout(t, "rollout:\n  steps: [1, 25%, 100%]\n  readyTimeout: 15s\n  onFailure: rollback\n", n)

	setVersion(t, dir, "v2", "nowhere")
	var moved string
	deadline := time.Now().Add(2 * time.Minute)
	var s rolloutState
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		kids, err := childrenOf(ctx, e, ns)
		if err == nil {
			s, err = readRollout(ctx, e, name)
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for p, k := range kids {
			if k.pool == "" {
				continue
			}
			if moved != "" && moved != p {
				t.Fatalf("%s and %s both got the bad children; step 1 moves one parent", moved, p)
			}
			moved = p
		}
		if s.phase == "RolledBack" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rollback: %+v", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if moved == "" {
		t.Fatal("no parent ever got the bad children: the test proves nothing")
	}
	if s.failedParent != ns+"/"+moved || s.rejected == "" || s.stable != first.stable || !strings.Contains(s.message, "within 15s") {
		t.Errorf("TemplateSet after the rollback: %+v; want failedParent %s/%s, the candidate rejected, the stable kept", s, ns, moved)
	}
	waitEvent(t, ns, moved, "Warning", "RolloutFailed", moved, "rolled back")
	waitFleet(t, ns, n, first.stable, "v1")
	kids, err := childrenOf(context.Background(), e, ns)
	if err != nil {
		t.Fatal(err)
	}
	for p, k := range kids {
		if k.pool != "" {
			t.Errorf("%s still has the bad children after the rollback", p)
		}
		if p != moved && k.generation != 1 {
			t.Errorf("%s was not moved, but its Deployment is at generation %d", p, k.generation)
		}
	}
}

// With onFailure: pause, a failed step stays where it is. A spec change of
// a parent not moved is applied with the stable revision. A fixed edit
// reaches the moved parent, and the rest only after a resume.
func TestRolloutPauseFixResume(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	const n = 10
	_, ns, dir, name, _ := startRollout(t, "rollout:\n  steps: [1, 50%, 100%]\n  readyTimeout: 15s\n  onFailure: pause\n", n)

	setVersion(t, dir, "v2", "nowhere")
	failed := waitRollout(t, name, "the rollout Failed", 90*time.Second, func(s rolloutState) bool { return s.phase == "Failed" })
	moved := strings.TrimPrefix(failed.failedParent, ns+"/")
	waitEvent(t, ns, moved, "Warning", "RolloutFailed", "paused")
	kids, err := childrenOf(context.Background(), e, ns)
	if err != nil {
		t.Fatal(err)
	}
	other := ""
	for p, k := range kids {
		switch {
		case p == moved && k.pool != "nowhere":
			t.Errorf("the failed parent %s did not keep the candidate's children: %+v", p, k)
		case p != moved && (k.version != "v1" || k.generation != 1):
			t.Errorf("%s was not moved, but has %+v", p, k)
		case p != moved:
			other = p
		}
	}

	// A spec change of a parent not moved: applied, with the stable revision.
	patchSpec(t, ns, other, `{"spec":{"config":{"value":"changed"}}}`)
	eventually(t, 30*time.Second, other+" has the new value with v1", func(ctx context.Context) error {
		kids, err := childrenOf(ctx, e, ns)
		if err != nil {
			return err
		}
		if k := kids[other]; k.value != "changed" || k.version != "v1" {
			return fmt.Errorf("%s: %+v", other, k)
		}
		return nil
	})

	// A fixed edit: the moved parent gets it; nobody else until resume.
	setVersion(t, dir, "v3", "")
	paused := waitRollout(t, name, "the rollout Paused on the fixed candidate", 60*time.Second, func(s rolloutState) bool {
		return s.phase == "Paused" && s.candidate != "" && s.candidate != failed.candidate
	})
	eventually(t, 60*time.Second, moved+" has v3", func(ctx context.Context) error {
		kids, err := childrenOf(ctx, e, ns)
		if err != nil {
			return err
		}
		if k := kids[moved]; k.version != "v3" || k.pool != "" {
			return fmt.Errorf("%s: %+v", moved, k)
		}
		return nil
	})
	time.Sleep(5 * time.Second)
	if s, err := readRollout(context.Background(), e, name); err != nil || s.phase != "Paused" || s.step != 1 {
		t.Fatalf("moved on without a resume: %+v (%v)", s, err)
	}
	patchObject(t, v1alpha1.TemplateSetGVR, "", name, `{"spec":{"paused":false,"resume":"after-the-fix"}}`)
	done := waitRollout(t, name, "the rollout Complete", 120*time.Second, func(s rolloutState) bool { return s.phase == "Complete" && s.stable == paused.candidate })
	waitFleet(t, ns, n, done.stable, "v3")
	if kids, err := childrenOf(context.Background(), e, ns); err != nil || kids[other].value != "changed" {
		t.Errorf("%s lost its spec change: %+v (%v)", other, kids[other], err)
	}
}

// A TemplateSet whose status is cleared, or which is deleted, mid-rollout
// gets the rollout's state back: the candidate does not become stable for
// every parent at once.
func TestRolloutTemplateSetDeletedMidRollout(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	const n = 6
	_, ns, dir, name, first := startRollout(t, "rollout:\n  steps: [1, 100%]\n  readyTimeout: 10s\n  onFailure: pause\n", n)
	setVersion(t, dir, "v2", "nowhere")
	failed := waitRollout(t, name, "the rollout Failed", 90*time.Second, func(s rolloutState) bool { return s.phase == "Failed" })
	// A status cleared by hand is restored the same way.
	if _, err := e.Dyn.Resource(v1alpha1.TemplateSetGVR).Patch(context.Background(), name, types.MergePatchType,
		[]byte(`{"status":null}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	restored := waitRollout(t, name, "the status restored", 30*time.Second, func(s rolloutState) bool { return s.phase != "" })
	if restored.stable != first.stable || restored.candidate != failed.candidate || restored.phase != "Failed" {
		t.Fatalf("after the status was cleared: %+v; want stable %s, candidate %s, Failed", restored, first.stable, failed.candidate)
	}
	old, err := e.Get(context.Background(), v1alpha1.TemplateSetGVR, "", name)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Dyn.Resource(v1alpha1.TemplateSetGVR).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := waitRollout(t, name, "the TemplateSet made again", 30*time.Second, func(s rolloutState) bool { return s.phase != "" })
	if ts, err := e.Get(context.Background(), v1alpha1.TemplateSetGVR, "", name); err != nil || ts.GetUID() == old.GetUID() {
		t.Fatalf("the TemplateSet was not made again: %v", err)
	}
	if again.stable != first.stable || again.candidate != failed.candidate || again.phase != "Failed" {
		t.Fatalf("after the delete: %+v; want stable %s, candidate %s, Failed", again, first.stable, failed.candidate)
	}
	time.Sleep(5 * time.Second)
	kids, err := childrenOf(context.Background(), e, ns)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.TrimPrefix(failed.failedParent, ns+"/")
	for p, k := range kids {
		if p != moved && (k.pool != "" || k.generation != 1) {
			t.Errorf("%s moved after the TemplateSet was deleted: %+v", p, k)
		}
	}
}

// A TemplateSet's own status write does not wake its rollout: while 40
// parents are created over 8 s, a set with no rollout running writes its
// TemplateSet a few times (made, first state, a count), not on every
// decision that its previous write caused.
func TestTemplateSetIsNotWrittenInALoop(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	root, _ := rolloutSet(t, "rollout:\n  steps: [1, 100%]\n", "v1")
	name := "app." + ns
	var updates atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf := dynamicinformer.NewFilteredDynamicInformer(e.Dyn, v1alpha1.TemplateSetGVR, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) { updates.Add(1) }})
	go inf.Run(ctx.Done())
	startLoom(t, root, ns, loomOptions{quiet: true})
	waitRollout(t, name, "a stable revision", 60*time.Second, func(s rolloutState) bool { return s.stable != "" })
	before := updates.Load()
	for i := range 40 {
		createParentAs(t, ns, "minimal", fmt.Sprintf("p-%d", i))
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	if n := updates.Load() - before; n > 3 {
		t.Errorf("the TemplateSet was written %d times while 40 parents were created; at most 3 (a count every 30s)", n)
	}
}

// A set without a rollout policy has no TemplateSet; an edit that adds one
// starts its rollouts without a restart: the TemplateSet is made, and every
// parent records the revision it renders.
func TestRolloutPolicyAddedByAnEdit(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	const n = 3
	ns := e.NewNamespace(t)
	root, dir := rolloutSet(t, "", "v1")
	startLoom(t, root, ns, loomOptions{quiet: true, admin: true}) // the edit adds rollouts, which the RBAC generated at start does not cover
	name := "app." + ns
	fleet(t, ns, n)
	eventually(t, 60*time.Second, "every parent Ready", func(ctx context.Context) error {
		for i := range n {
			p, err := e.Get(ctx, myresGVR, ns, fmt.Sprintf("p-%d", i))
			if err != nil {
				return err
			}
			if st, _, msg := condition(p, "Ready"); st != "True" {
				return fmt.Errorf("p-%d: Ready=%s (%s)", i, st, msg)
			}
		}
		return nil
	})
	if _, err := e.Get(context.Background(), v1alpha1.TemplateSetGVR, "", name); !isNotFound(err) {
		t.Fatalf("a set without a rollout policy has a TemplateSet: %v", err)
	}
	loomYAML := env.Fixture(t, "sets/myresource/loom.yaml") + "rollout:\n  steps: [1, 100%]\n"
	if err := os.WriteFile(filepath.Join(dir, "loom.yaml"), []byte(loomYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	first := waitRollout(t, name, "a TemplateSet after the edit", 60*time.Second, func(s rolloutState) bool { return s.stable != "" && s.phase == "Complete" })
	waitFleet(t, ns, n, first.stable, "v1")
}

// A set with a rollout policy whose Loom may not read TemplateSets (RBAC
// from before rollouts) renders nothing, since it cannot tell which
// revision each parent renders: every parent says so in a
// RolloutUnavailable condition and Event, and granting the permission
// starts the rollout with no restart. On the old code the set's controller
// never started, and its parents showed nothing at all.
func TestRolloutWithoutRBAC(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	user := "loom-norollout-" + ns
	grant(t, user, user, baseRules...)
	root, _ := rolloutSet(t, "rollout:\n  steps: [1, 100%]\n", "v1")
	startLoom(t, root, ns, loomOptions{impersonate: user, quiet: true})
	fleet(t, ns, 2)
	for _, name := range []string{"p-0", "p-1"} {
		waitDegraded(t, myresGVR, ns, name, "RolloutUnavailable", "may not read TemplateSets", "forbidden")
	}
	waitEvent(t, ns, "p-0", "Warning", "RolloutUnavailable", "forbidden")
	kids, err := childrenOf(context.Background(), e, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 0 {
		t.Errorf("children were rendered while the revision was unknown: %v", kids)
	}

	grant(t, user+"-rollouts", user,
		rbacv1.PolicyRule{APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.TemplateSetResource, v1alpha1.TemplateRevisionResource}, Verbs: all},
		rbacv1.PolicyRule{APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.TemplateSetStatusResource}, Verbs: all})
	first := waitRollout(t, "app."+ns, "a stable revision after the grant", 90*time.Second, func(s rolloutState) bool { return s.stable != "" })
	waitFleet(t, ns, 2, first.stable, "v1")
	waitEvent(t, ns, "p-0", "Normal", "Recovered", "RolloutUnavailable")
}
