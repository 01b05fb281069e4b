package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-operator/loom/internal/testutil"
)

// chartSet copies the differential tests' web chart into a new set that
// names it (chart: chart), with one golden case, and returns the set.
func chartSet(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "web")
	if err := os.CopyFS(filepath.Join(dir, "chart"), os.DirFS(filepath.Join(repoRoot, "engine/chart/testdata/charts/web"))); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"loom.yaml":       "parent:\n  apiVersion: example.loom.dev/v1alpha1\n  kind: WebApp\nchart: chart\nlookups:\n  - {apiVersion: v1, kind: Secret}\n",
		"tests/shop.yaml": "apiVersion: example.loom.dev/v1alpha1\nkind: WebApp\nmetadata: {name: shop, namespace: team-a}\nspec:\n  replicaCount: 3\n  db: {enabled: false}\n",
		// The chart's pre-install Job has completed: the other children
		// no longer wait for it.
		"tests/shop.lookups.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata: {name: shop-web-migrate, namespace: team-a}\nstatus:\n  succeeded: 1\n  conditions:\n  - {type: Complete, status: \"True\"}\n",
	}
	testutil.WriteFiles(t, dir, files)
	return dir
}

// jobDone is the chart's pre-install Jobs, complete, as a lookups file.
const jobDone = `apiVersion: batch/v1
kind: Job
metadata: {name: shop-web-early, namespace: team-a}
status: {succeeded: 1, conditions: [{type: Complete, status: "True"}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: shop-web-migrate, namespace: team-a}
status: {succeeded: 1, conditions: [{type: Complete, status: "True"}]}
`

// loom test holds a chart set to its golden files: an edit of the chart's
// values.yaml is a diff, and --update accepts it. The golden file holds
// what Loom would apply now: with the pre-install Jobs complete (in the
// case's lookups file) every child but the post-install hook, which waits
// for the others to be ready; without them only the first Job.
func TestGoldenCommandOnChartSet(t *testing.T) {
	dir := chartSet(t)
	lookups := filepath.Join(dir, "tests", "shop.lookups.yaml")
	goldenFile := filepath.Join(dir, "tests", "shop.golden.yaml")
	if err := os.WriteFile(lookups, []byte(jobDone), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := execute(t, "", "test", "--update", dir); err != nil || !strings.Contains(out, "1 updated") {
		t.Fatalf("--update: err %v\n%s", err, out)
	}
	golden, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: Deployment", "replicas: 3", "name: shop-web-migrate", "app.kubernetes.io/managed-by: loom"} {
		if !strings.Contains(string(golden), want) {
			t.Errorf("golden file lacks %q:\n%s", want, golden)
		}
	}
	if strings.Contains(string(golden), "test-connection") {
		t.Error("the golden file holds the chart's test hook")
	}
	if out, err := execute(t, "", "test", dir); err != nil || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("test: err %v\n%s", err, out)
	}

	values := filepath.Join(dir, "chart", "values.yaml")
	b, err := os.ReadFile(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(values, []byte(strings.Replace(string(b), "pullPolicy: IfNotPresent", "pullPolicy: Always", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "", "test", dir)
	if err == nil || !strings.Contains(out, "+        imagePullPolicy: Always") {
		t.Fatalf("after a values.yaml edit: err %v, want a failure with a diff:\n%s", err, out)
	}

	// Without the Job complete, everything else waits for it.
	if err := os.Remove(lookups); err != nil {
		t.Fatal(err)
	}
	if out, err := execute(t, "", "test", "--update", dir); err != nil || !strings.Contains(out, "1 updated") {
		t.Fatalf("--update: err %v\n%s", err, out)
	}
	if golden, err = os.ReadFile(goldenFile); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(golden), "\nkind: "); n != 1 || !strings.Contains(string(golden), "name: shop-web-early") {
		t.Errorf("without the Jobs complete, want only the first (the lightest) in the golden file, got %d objects:\n%s", n, golden)
	}
}

// A null in a chart set's parent removes the chart's default, as it does
// in Helm's values: loom render admits the parent through the generated
// CRD (made from values.schema.json, where pullPolicy has an enum)
// without dropping the null, so the Deployment loses values.yaml's
// imagePullPolicy: IfNotPresent.
func TestRenderChartSetNullRemovesDefault(t *testing.T) {
	dir := chartSet(t)
	parents := writeFiles(t, t.TempDir(), map[string]string{"p.yaml": "apiVersion: example.loom.dev/v1alpha1\nkind: WebApp\nmetadata: {name: shop, namespace: team-a}\nspec:\n  db: {enabled: false}\n  image: {pullPolicy: null}\n"})
	out, err := execute(t, "", "render", "-t", dir, "-f", filepath.Join(parents, "p.yaml"), "--lookups", writeFiles(t, t.TempDir(), map[string]string{"l.yaml": jobDone})+"/l.yaml")
	if err != nil {
		t.Fatalf("loom render: %v\n%s", err, out)
	}
	if !strings.Contains(out, "kind: Deployment") {
		t.Fatalf("no Deployment rendered:\n%s", out)
	}
	if strings.Contains(out, "imagePullPolicy: IfNotPresent") {
		t.Errorf("image.pullPolicy: null did not remove the chart's default IfNotPresent:\n%s", out)
	}
}
