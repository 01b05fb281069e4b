//go:build e2e

package e2e

// A chart set's seed Secret on the cluster: it is found again after a
// restart under its old name, and its loss is said on the parent.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// seededSet writes randomChartFiles (or files) for kind (in
// charts.e2e.loom.dev) as a chart set whose CRD Loom installs; the CRD is
// deleted when the test ends.
func seededSet(t *testing.T, kind string, files map[string]string) chartSet {
	t.Helper()
	set := map[string]string{}
	for name, text := range files {
		set[name] = strings.ReplaceAll(text, "kind: RandomApp", "kind: "+kind)
	}
	gvr := schema.GroupVersionResource{Group: "charts.e2e.loom.dev", Version: "v1", Resource: strings.ToLower(kind) + "s"}
	return newChartSet(t, "db", set, gvr)
}

// kill SIGKILLs a Loom process and waits for it to exit.
func kill(t *testing.T, p *loomProcess) {
	t.Helper()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
}

// mustGet reads an object or fails the test.
func mustGet(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	e := env.From(t)
	o, err := e.Get(context.Background(), gvr, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// A seed Secret of the name Loom gave it before the name held the group
// (loom-seed-<kind>-<name>) is moved to the new name: the parent keeps
// its seed, so its values, with no write to its children, and the old
// Secret is deleted.
func TestSeedSecretOfTheOldNameIsMigrated(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	set := seededSet(t, "SeedMoveApp", randomChartFiles)
	gvr := set.gvr
	first := set.startProcess(t, ns)
	parent := createObject(t, gvr, ns, "apiVersion: charts.e2e.loom.dev/v1\nkind: SeedMoveApp\nmetadata:\n  name: a\nspec: {}\n")
	waitConditionGVR(t, gvr, ns, "a", "Ready", "True")
	const newName, oldName = "loom-seed-seedmoveapp.charts.e2e.loom.dev-a", "loom-seed-seedmoveapp-a"
	auth := mustGet(t, secretGVR, ns, "a-auth")
	seed := mustGet(t, secretGVR, ns, newName)
	kill(t, first)

	// What an earlier Loom left: the seed under the old name.
	createObject(t, secretGVR, ns, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  ownerReferences: [{apiVersion: charts.e2e.loom.dev/v1, kind: SeedMoveApp, name: a, uid: %s}]
data: {seed: %s}
`, oldName, parent.GetUID(), seed.Object["data"].(map[string]any)["seed"]))
	if err := e.Dyn.Resource(secretGVR).Namespace(ns).Delete(context.Background(), newName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, secretGVR, ns, newName, "it was deleted")

	set.startProcess(t, ns)
	eventually(t, 60*time.Second, "the seed is under its new name, and the old Secret gone", func(ctx context.Context) error {
		moved, err := e.Get(ctx, secretGVR, ns, newName)
		if err != nil {
			return err
		}
		if got, want := moved.Object["data"].(map[string]any)["seed"], seed.Object["data"].(map[string]any)["seed"]; got != want {
			return fmt.Errorf("seed %v, want the old Secret's %v", got, want)
		}
		if _, err := e.Get(ctx, secretGVR, ns, oldName); !isNotFound(err) {
			return fmt.Errorf("the old Secret is still there (%v)", err)
		}
		return nil
	})
	// The reconcile that moved the seed applies the children right after
	// (milliseconds): five seconds without a write to the chart's Secret
	// show that its values did not change.
	unchanged(t, 5*time.Second, ns, auth)
	waitConditionGVR(t, gvr, ns, "a", "Ready", "True")
}

// unchanged checks for d that obj is not written.
func unchanged(t *testing.T, d time.Duration, ns string, obj *unstructured.Unstructured) {
	t.Helper()
	e := env.From(t)
	consistently(t, d, obj.GetName()+" is not written", func(ctx context.Context) error {
		now, err := e.Get(ctx, secretGVR, ns, obj.GetName())
		if err != nil {
			return err
		}
		if now.GetResourceVersion() != obj.GetResourceVersion() {
			return fmt.Errorf("%s was written: %v, was %v", obj.GetName(), now.Object["data"], obj.Object["data"])
		}
		return nil
	})
}

// hookSetFiles is a set over engine/chart's hook chart (an htpasswd
// Secret, and a TLS Secret with a CA and a certificate signed by it),
// for parents of kind.
func hookSetFiles(t *testing.T, kind string) map[string]string {
	t.Helper()
	e := env.From(t)
	files := map[string]string{"loom.yaml": "parent:\n  apiVersion: charts.e2e.loom.dev/v1\n  kind: " + kind + "\nchart: chart\n"}
	dir := filepath.Join(e.Root, "engine", "chart", "testdata", "charts", "hook")
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[filepath.Join("chart", rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A chart's generated certificates and htpasswd lines are the parent's:
// kept in its seed Secret, they survive a SIGKILL of Loom and a new
// process, with no write to the children.
func TestChartGeneratedValuesSurviveARestart(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	set := seededSet(t, "HookApp", hookSetFiles(t, "HookApp"))
	gvr := set.gvr
	first := set.startProcess(t, ns)
	createObject(t, gvr, ns, "apiVersion: charts.e2e.loom.dev/v1\nkind: HookApp\nmetadata:\n  name: a\nspec: {webhook: {configuration: false}}\n")
	waitConditionGVR(t, gvr, ns, "a", "Ready", "True")
	tls, auth := mustGet(t, secretGVR, ns, "a-hook-tls"), mustGet(t, secretGVR, ns, "a-hook-auth")
	crt, _, _ := unstructured.NestedString(tls.Object, "data", "tls.crt")
	if len(crt) < 200 {
		t.Fatalf("tls.crt %q", crt)
	}
	seed := mustGet(t, secretGVR, ns, "loom-seed-hookapp.charts.e2e.loom.dev-a")
	var kept []string
	for k := range seed.Object["data"].(map[string]any) {
		if strings.HasPrefix(k, "gen.") {
			kept = append(kept, k)
		}
	}
	if len(kept) != 3 {
		t.Errorf("the seed Secret keeps %v, want three generated values (htpasswd, genCA, genSignedCert)", kept)
	}

	kill(t, first)
	second := set.startProcess(t, ns)
	eventually(t, 60*time.Second, "the new process reconciles", func(context.Context) error {
		if !second.leading() {
			return errNotYet
		}
		return nil
	})
	// The new process reconciles the one parent within a second of
	// starting its workers; ten seconds without a write show that the
	// certificate and the hash it renders are the kept ones.
	for _, s := range []*unstructured.Unstructured{tls, auth} {
		unchanged(t, 5*time.Second, ns, s)
	}
	now, _, _ := unstructured.NestedString(mustGet(t, secretGVR, ns, "a-hook-tls").Object, "data", "tls.crt")
	if now != crt {
		t.Errorf("the certificate changed after the restart")
	}
	if st, _, msg := condition(mustGet(t, gvr, ns, "a"), "Ready"); st != "True" {
		t.Errorf("Ready=%s after the restart: %s", st, msg)
	}
}

// A seed Secret deleted while Loom is stopped is not silently made again
// (which would give the chart's passwords new values under a running
// app): the parent is Degraded (SeedLost, with an Event) and names the
// annotation that accepts a new seed; its children are not written.
// With the annotation, Loom makes a new seed and the values change once.
func TestLostSeedDegradesTheParent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	set := seededSet(t, "SeedLossApp", randomChartFiles)
	gvr := set.gvr
	first := set.startProcess(t, ns)
	createObject(t, gvr, ns, "apiVersion: charts.e2e.loom.dev/v1\nkind: SeedLossApp\nmetadata:\n  name: a\nspec: {}\n")
	waitConditionGVR(t, gvr, ns, "a", "Ready", "True")
	const seedName = "loom-seed-seedlossapp.charts.e2e.loom.dev-a"
	var fp string
	eventually(t, 30*time.Second, "the parent carries its seed's fingerprint", func(ctx context.Context) error {
		p, err := e.Get(ctx, gvr, ns, "a")
		if err != nil {
			return err
		}
		mark, uid, ok := strings.Cut(p.GetAnnotations()["loom.dev/seed"], "/")
		if !ok || uid != string(p.GetUID()) {
			return fmt.Errorf("loom.dev/seed %q, want <fingerprint>/<uid>", p.GetAnnotations()["loom.dev/seed"])
		}
		fp = mark
		return nil
	})
	auth := mustGet(t, secretGVR, ns, "a-auth")
	kill(t, first)
	if err := e.Dyn.Resource(secretGVR).Namespace(ns).Delete(context.Background(), seedName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, secretGVR, ns, seedName, "it was deleted")

	set.startProcess(t, ns)
	accept := "kubectl annotate seedlossapp.charts.e2e.loom.dev a -n " + ns + " loom.dev/accept-new-seed=" + fp
	waitDegraded(t, gvr, ns, "a", "SeedLost", "was deleted", accept)
	waitEvent(t, ns, "a", "Warning", "SeedLost", accept)
	// Degraded is written after the render that found the loss, which
	// applies nothing: five seconds more show that nothing is written.
	unchanged(t, 5*time.Second, ns, auth)
	if _, err := e.Get(context.Background(), secretGVR, ns, seedName); !isNotFound(err) {
		t.Errorf("a new seed Secret was made before the loss was accepted (%v)", err)
	}

	patch := fmt.Sprintf(`{"metadata":{"annotations":{"loom.dev/accept-new-seed":%q}}}`, fp)
	if _, err := e.Dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), "a", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "a new seed, new values, and the parent Ready", func(ctx context.Context) error {
		p, err := e.Get(ctx, gvr, ns, "a")
		if err != nil {
			return err
		}
		if now, _, _ := strings.Cut(p.GetAnnotations()["loom.dev/seed"], "/"); now == "" || now == fp {
			return fmt.Errorf("loom.dev/seed is %q, want a new fingerprint", now)
		}
		if st, reason, msg := condition(p, "Ready"); st != "True" {
			return fmt.Errorf("Ready=%s (%s: %s)", st, reason, msg)
		}
		s, err := e.Get(ctx, secretGVR, ns, "a-auth")
		if err != nil {
			return err
		}
		if s.Object["data"].(map[string]any)["replication"] == auth.Object["data"].(map[string]any)["replication"] {
			return errors.New("the replication key is the old one")
		}
		_, err = e.Get(ctx, secretGVR, ns, seedName)
		return err
	})
}

// Two sets with the same Kind in two groups, and parents of the same
// name in one namespace, get a seed Secret each (the name holds the
// group; before, the second parent found the first one's Secret, not
// its own, and failed): both parents are Ready, with seeds of their own.
func TestSeedSecretsOfOneKindInTwoGroups(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	root := t.TempDir()
	var gvrs []schema.GroupVersionResource
	for _, group := range []string{"charts.e2e.loom.dev", "other.e2e.loom.dev"} {
		set := map[string]string{}
		for name, text := range randomChartFiles {
			text = strings.ReplaceAll(text, "apiVersion: charts.e2e.loom.dev/v1\n  kind: RandomApp", "apiVersion: "+group+"/v1\n  kind: TwinApp")
			// The children's names differ by group; the parents' do not.
			set[name] = strings.ReplaceAll(text, "{{ .Release.Name }}-auth", "{{ .Release.Name }}-auth-"+group[:5])
		}
		testutil.WriteFiles(t, filepath.Join(root, group), set)
		gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "twinapps"}
		gvrs = append(gvrs, gvr)
		t.Cleanup(func() {
			_ = e.Dyn.Resource(crdGVR).Delete(context.Background(), gvr.Resource+"."+gvr.Group, metav1.DeleteOptions{})
		})
	}
	startLoomProcess(t, ns, "--templates", root, "--install-crds")
	waitServed(t, ns, gvrs[0])
	for _, gvr := range gvrs {
		waitServed(t, ns, gvr)
		createObject(t, gvr, ns, "apiVersion: "+gvr.Group+"/v1\nkind: TwinApp\nmetadata:\n  name: a\nspec: {}\n")
	}
	for _, gvr := range gvrs {
		waitConditionGVR(t, gvr, ns, "a", "Ready", "True")
	}
	a := mustGet(t, secretGVR, ns, "loom-seed-twinapp.charts.e2e.loom.dev-a")
	b := mustGet(t, secretGVR, ns, "loom-seed-twinapp.other.e2e.loom.dev-a")
	if a.Object["data"].(map[string]any)["seed"] == b.Object["data"].(map[string]any)["seed"] {
		t.Error("two parents share one seed")
	}
}
