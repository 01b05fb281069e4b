package render

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/internal/testutil"
)

// seedReader is a Reader with a seed per parent name, as the
// controller's, which keeps each in a Secret, with the generated values
// kept for it.
type seedReader struct {
	Reader
	seeds map[string][]byte
	kept  map[string]map[string]string
}

func (r seedReader) Seed(p *unstructured.Unstructured) (Seed, error) {
	return Seed{Bytes: r.seeds[p.GetName()], Kept: r.kept[p.GetName()]}, nil
}

func database(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1", "kind": "Database",
		"metadata": map[string]any{"name": name, "namespace": "team-a", "uid": "u-" + name},
		"spec":     map[string]any{},
	}}
}

// secretData renders parent's Secret and returns its data, decoded.
func secretData(t *testing.T, set *Set, parent *unstructured.Unstructured, reader Reader) map[string]string {
	t.Helper()
	out, err := set.RenderWith(parent, reader)
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]string{}
	for k, v := range out.Children[0].Object["data"].(map[string]any) {
		b, err := base64.StdEncoding.DecodeString(v.(string))
		if err != nil {
			t.Fatalf("data.%s: %v", k, err)
		}
		data[k] = string(b)
	}
	for k, v := range out.Children[0].Object["stringData"].(map[string]any) {
		data[k] = v.(string)
	}
	return data
}

// A chart's random functions take their values from the parent's seed:
// the same seed, the same values, render after render and in any
// process; another parent, or another seed, other values; two identical
// calls in one file, two values.
func TestChartRandomFunctionsAreSeeded(t *testing.T) {
	set, err := Load("testdata/chartsets/secrets")
	if err != nil {
		t.Fatal(err)
	}
	reader := seedReader{Reader: NewObjectsReader(nil), seeds: map[string][]byte{"a": []byte("seed-of-a"), "b": []byte("seed-of-b")}}
	a1 := secretData(t, set, database("a"), reader)
	again, err := Load("testdata/chartsets/secrets") // another process
	if err != nil {
		t.Fatal(err)
	}
	a2 := secretData(t, again, database("a"), reader)
	b := secretData(t, set, database("b"), reader)
	if a1["password"] != a2["password"] || a1["id"] != a2["id"] || a1["pin"] != a2["pin"] {
		t.Errorf("the same parent and seed gave other values: %v, then %v", a1, a2)
	}
	if a1["password"] == b["password"] || a1["id"] == b["id"] {
		t.Errorf("two parents got the same values: %v and %v", a1, b)
	}
	if a1["password"] == a1["replication"] {
		t.Errorf("two identical calls in one file gave one value: %q", a1["password"])
	}
	if !regexp.MustCompile(`^[a-zA-Z0-9]{24}$`).MatchString(a1["password"]) || !regexp.MustCompile(`^[0-9]{6}$`).MatchString(a1["pin"]) {
		t.Errorf("values not of their function's alphabet: %v", a1)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(a1["id"]) {
		t.Errorf("uuidv4 %q is not a version 4 UUID", a1["id"])
	}
	// Another seed for the same parent (its Secret was lost): other values.
	reader.seeds["a"] = []byte("another seed")
	if c := secretData(t, set, database("a"), reader); c["password"] == a1["password"] {
		t.Error("a new seed gave the old password")
	}
	// Offline, each parent still gets values of its own, the same each time.
	o1, o2 := secretData(t, set, database("a"), nil), secretData(t, set, database("a"), nil)
	if o1["password"] != o2["password"] || o1["password"] == secretData(t, set, database("b"), nil)["password"] {
		t.Errorf("offline values: %v, %v", o1, o2)
	}
}

// The clock refuses a chart where a call runs, at its line, and not at
// all in a branch the values never take (charts call now in branches
// that are off by default). Keys, certificates and salted hashes do not
// refuse it: they are kept (TestChartGeneratedValuesAreKept).
func TestChartClockRefusedWhereItRuns(t *testing.T) {
	for _, call := range []string{"now", "ago .Values.t"} {
		dir := t.TempDir()
		testutil.WriteFiles(t, dir, map[string]string{
			"loom.yaml":               "parent:\n  apiVersion: example.loom.dev/v1alpha1\n  kind: Database\nchart: chart\n",
			"chart/Chart.yaml":        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
			"chart/values.yaml":       "stamp: false\n",
			"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  {{- if .Values.stamp }}\n  a: {{ " + call + " | toString | quote }}\n  {{- end }}\n",
		})
		set, err := Load(dir)
		if err != nil {
			t.Fatalf("%s in a branch not taken: the set does not load: %v", call, err)
		}
		p := database("a")
		if _, err := set.Render(p); err != nil {
			t.Errorf("%s in a branch not taken: %v", call, err)
		}
		p.Object["spec"] = map[string]any{"stamp": true}
		_, err = set.Render(p)
		if err == nil || !strings.Contains(err.Error(), "chart/templates/cm.yaml:7") || !strings.Contains(err.Error(), "would rewrite the child on every reconcile") {
			t.Errorf("%s where it runs: want a refusal at chart/templates/cm.yaml:7, got %v", call, err)
		}
	}
}

// The chart that keeps its password by looking up its own Secret renders
// the same Secret when the lookup finds it: the value made in the other
// branch is kept, and the key made after the if keeps its value too (a
// call's value is keyed by where it is in the source, not by how many
// calls ran before it). Two calls never share a value.
func TestChartRandomValuesDoNotDependOnBranches(t *testing.T) {
	set, err := Load("testdata/chartsets/secrets")
	if err != nil {
		t.Fatal(err)
	}
	parent := database("a")
	reader := seedReader{Reader: NewObjectsReader(nil), seeds: map[string][]byte{"a": []byte("seed-of-a")}}
	out, err := set.RenderWith(parent, reader)
	if err != nil {
		t.Fatal(err)
	}
	first := out.Children[0].DeepCopy()
	first.SetOwnerReferences(nil)
	first.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "example.loom.dev/v1alpha1", Kind: "Database", Name: "a", UID: "u-a", Controller: ptrTrue()}})
	before := secretData(t, set, parent, reader)
	if before["password"] == before["replication"] {
		t.Errorf("the password and the replication key are the same value %q", before["password"])
	}
	reader.Reader = NewObjectsReader([]*unstructured.Unstructured{first})
	after := secretData(t, set, parent, reader)
	if after["password"] != before["password"] || after["replication"] != before["replication"] {
		t.Errorf("the Secret changes once the lookup finds it (a write, and a rotated key):\nbefore %v\nafter  %v", before, after)
	}
}

func ptrTrue() *bool { b := true; return &b }
