package render

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/render/yamldoc"
)

// TestRenderDocuments checks which rendered documents become children.
func TestRenderDocuments(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		spec  string
		want  []string
	}{
		{
			name:  "conditional child rendered",
			files: map[string]string{"cm.yaml": "{{- if .Spec.enabled }}\n" + configMap("cm", "  k: v\n") + "{{- end }}\n"},
			spec:  "  enabled: true\n",
			want:  []string{"ConfigMap cm"},
		},
		{
			name: "conditional child skipped, file renders nothing",
			files: map[string]string{
				"cm.yaml":  "{{- if .Spec.enabled }}\n" + configMap("cm", "  k: v\n") + "{{- end }}\n",
				"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n",
			},
			want: []string{"Service svc"},
		},
		{
			name:  "conditional document among others",
			files: map[string]string{"a.yaml": configMap("one", "  k: v\n") + "---\n{{- if .Spec.enabled }}\n" + configMap("two", "  k: v\n") + "{{- end }}\n---\n" + configMap("three", "  k: v\n")},
			want:  []string{"ConfigMap one", "ConfigMap three"},
		},
		{
			name:  "documents of only comments or whitespace",
			files: map[string]string{"a.yaml": "# header comment\n---\n\n   \n---\n# just a comment\n# and another\n---\n" + configMap("cm", "  k: v\n") + "---\n"},
			want:  []string{"ConfigMap cm"},
		},
		{
			name:  "separators with trailing comments and spaces",
			files: map[string]string{"a.yaml": "--- # first\n" + configMap("a", "  k: v\n") + "---   \n" + configMap("b", "  k: v\n") + "---#tight\n" + configMap("c", "  k: v\n")},
			want:  []string{"ConfigMap a", "ConfigMap b", "ConfigMap c"},
		},
		{
			name:  "a line starting with --- and text is not a separator",
			files: map[string]string{"a.yaml": configMap("a", "  k: |\n    x\n    ---text\n")},
			want:  []string{"ConfigMap a"},
		},
		{
			name:  "separator emitted by a range",
			files: map[string]string{"a.yaml": "{{- range .Spec.names }}\n---\n" + configMap("{{ . }}", "  k: v\n") + "{{- end }}\n"},
			spec:  "  names: [x, z]\n",
			want:  []string{"ConfigMap x", "ConfigMap z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, tt.files)
			got := names(mustRender(t, s, app(t, tt.spec)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("children mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderOrder checks that children come in apply order whatever the
// files are called: config before services before workloads, then kinds
// Loom does not rank, by kind and name.
func TestRenderOrder(t *testing.T) {
	s := loadSet(t, map[string]string{
		"a-deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
		"b-service.yaml":    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n",
		"c-widgets.yaml":    "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: b\n---\napiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: z\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: a\n",
		"d-config.yaml":     configMap("web-b", "  k: v\n") + "---\n" + configMap("web-a", "  k: v\n"),
		"e-account.yaml":    "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: web\n",
	})
	got := names(mustRender(t, s, app(t, "")))
	want := []string{
		"ServiceAccount web",
		"ConfigMap web-a",
		"ConfigMap web-b",
		"Service web",
		"Deployment web",
		"Gadget z",
		"Widget a",
		"Widget b",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
}

// TestRenderNoSpec checks what templates see of a parent without a spec.
func TestRenderNoSpec(t *testing.T) {
	s := loadSet(t, map[string]string{"cm.yaml": configMap("cm", "  has: {{ hasKey .Spec \"x\" | quote }}\n  name: {{ .Name }}\n  labels: {{ len .Labels | quote }}\n")})
	parent := fixture(t, "apiVersion: example.com/v1\nkind: App\nmetadata:\n  name: web\n  namespace: default\n")
	got := mustRender(t, s, parent)
	want := map[string]any{"has": "false", "name": "web", "labels": "0"}
	if diff := cmp.Diff(want, got[0].Object["data"]); diff != "" {
		t.Errorf("data mismatch (-want +got):\n%s", diff)
	}
}

// TestRenderDoesNotMutateParent checks that a template that changes its
// data with sprig's set, unset or merge cannot change the caller's parent.
func TestRenderDoesNotMutateParent(t *testing.T) {
	s := loadSet(t, map[string]string{"cm.yaml": `{{- $_ := set .Spec "image" "evil" }}
{{- $_ := unset .Spec "keep" }}
{{- $_ := set .Parent.metadata "name" "renamed" }}
{{- $_ := set .Labels "injected" "yes" }}
{{- $_ := set (index .Spec.list 0) "k" "changed" }}
{{- $_ := merge .Spec.nested (dict "added" 1) }}
` + configMap("cm", "  image: {{ .Spec.image }}\n")})
	parent := app(t, "  image: nginx\n  keep: 1\n  list:\n  - k: v\n  nested: {a: 1}\n")
	parent.SetLabels(map[string]string{"team": "a"})
	before := parent.DeepCopy()
	got := mustRender(t, s, parent)
	if diff := cmp.Diff(before.Object, parent.Object); diff != "" {
		t.Errorf("Render changed the parent (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"image": "evil"}, got[0].Object["data"]); diff != "" {
		t.Errorf("the template did not see its own change (-want +got):\n%s", diff)
	}
	if got := got[0].GetOwnerReferences(); len(got) != 1 || got[0].Name != "web" {
		t.Errorf("ownerReferences = %+v, want one naming the parent web", got)
	}
}

// TestRenderConcurrent renders from 8 goroutines at once and checks that
// every result equals the one rendered alone. Run it with -race.
func TestRenderConcurrent(t *testing.T) {
	s, err := Load(myresourceDir)
	if err != nil {
		t.Fatal(err)
	}
	parents := make([]*unstructured.Unstructured, 16)
	want := make([][]byte, len(parents))
	for i := range parents {
		parents[i] = myResource(t, fmt.Sprintf("web-%d", i%4), i%3)
		want[i] = marshal(t, mustRender(t, s, parents[i]))
	}
	const workers, rounds = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				i := (w*rounds + r) % len(parents)
				out, err := s.Render(parents[i])
				if err != nil {
					errs <- err
					return
				}
				b, err := MarshalStream(out)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(want[i], b) {
					errs <- fmt.Errorf("parent %d rendered differently:\n%s\nwant:\n%s", i, b, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// myResource returns a MyResource for the shipped set; config selects one
// of three specs, the last without config.
func myResource(t testing.TB, name string, config int) *unstructured.Unstructured {
	t.Helper()
	spec := "  image: nginx:1.27\n  replicas: 2\n"
	switch config {
	case 0:
		spec += "  config:\n    A: one\n"
	case 1:
		spec += "  config:\n    B: two\n    C: three\n"
	}
	return fixture(t, "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: "+name+"\n  namespace: default\n  uid: uid-"+name+"\nspec:\n"+spec)
}

func marshal(t testing.TB, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	b, err := MarshalStream(objs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeCacheNotAliased checks that rendering a parent twice (the second
// time from the decode cache) gives equal objects that share no memory.
func TestDecodeCacheNotAliased(t *testing.T) {
	s, err := Load(myresourceDir)
	if err != nil {
		t.Fatal(err)
	}
	parent := myResource(t, "web", 0)
	first := mustRender(t, s, parent)
	firstCopy := make([]*unstructured.Unstructured, len(first))
	for i, c := range first {
		firstCopy[i] = c.DeepCopy()
	}
	second := mustRender(t, s, parent)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Fatalf("second render differs (-first +second):\n%s", diff)
	}
	if got := names(first); !cmp.Equal(got, []string{"ConfigMap web-config", "Service web", "Deployment web"}) {
		t.Fatalf("rendered %v", got)
	}
	// Change every level of the first result: maps, slices and scalars.
	for _, c := range first {
		c.SetName("changed")
		c.SetLabels(map[string]string{"changed": "yes"})
		c.Object["spec"] = "changed"
		c.Object["data"] = nil
	}
	ports := second[2].Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["ports"].([]any)
	ports[0].(map[string]any)["containerPort"] = int64(1)
	third := mustRender(t, s, parent)
	if diff := cmp.Diff(firstCopy, third); diff != "" {
		t.Errorf("changing earlier results changed a later render (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(firstCopy[:2], second[:2]); diff != "" {
		t.Errorf("changing the first result changed the second (-want +got):\n%s", diff)
	}
}

// TestDecodeCacheDoesNotHideErrors checks that a document that failed is
// not cached: rendering it again fails again.
func TestDecodeCacheDoesNotHideErrors(t *testing.T) {
	s := loadSet(t, map[string]string{"a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {{ .Spec.replicas }}\n"})
	for i := range 2 {
		got := renderErr(t, s, app(t, "  replicas: x\n"))
		if want := "a.yaml:6 (document 1) Deployment web: spec.replicas: must be int32, not string"; got != want {
			t.Errorf("render %d: error %q, want %q", i+1, got, want)
		}
	}
	if got := mustRender(t, s, app(t, "  replicas: 2\n")); got[0].Object["spec"].(map[string]any)["replicas"] != int64(2) {
		t.Errorf("replicas = %#v, want int64(2)", got[0].Object["spec"])
	}
}

// TestStream checks MarshalStream's stable output and ReadParents.
func TestStream(t *testing.T) {
	objs := []*unstructured.Unstructured{
		fixture(t, "kind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\ndata: {z: \"1\", a: \"2\"}\n"),
		fixture(t, "apiVersion: v1\nkind: Service\nmetadata: {name: b}\n"),
	}
	got, err := MarshalStream(objs)
	if err != nil {
		t.Fatal(err)
	}
	want := "---\napiVersion: v1\ndata:\n  a: \"2\"\n  z: \"1\"\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("MarshalStream mismatch (-want +got):\n%s", diff)
	}
	back, err := ReadParents(strings.NewReader("# comment only\n---\n" + string(got) + "---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(objs, back); diff != "" {
		t.Errorf("ReadParents mismatch (-want +got):\n%s", diff)
	}
	_, err = ReadParents(strings.NewReader("a: 1\n---\nb: [\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "document 2: ") {
		t.Errorf("ReadParents error = %v, want one naming document 2", err)
	}
}

// TestDecodeYAMLRoundTrip checks that what MarshalStream writes decodes to
// the same objects, for values that YAML could mistake for other types.
func TestDecodeYAMLRoundTrip(t *testing.T) {
	obj := fixture(t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: x
data:
  "yes": "yes"
  num: "0123"
  float: "1.0"
  "null": "null"
  multi: "a\nb"
  colon: "a: b"
`)
	out, err := MarshalStream([]*unstructured.Unstructured{obj})
	if err != nil {
		t.Fatal(err)
	}
	back, err := yamldoc.Decode([]byte(strings.TrimPrefix(string(out), "---\n")))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(obj.Object, back); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}
