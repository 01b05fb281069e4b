package pipeline

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/depend"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

const loomYAML = "parent:\n  apiVersion: example.com/v1\n  kind: App\n"

// deployment is a Deployment web that reads nothing.
const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
`

// configReadsWeb is a ConfigMap that looks up the Deployment web rendered
// beside it: it waits until web is Available.
const configReadsWeb = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  replicas: {{ dig "status" "availableReplicas" 0 (lookup "apps/v1" "Deployment" .Namespace "web") | quote }}
`

// availableWeb is the live Deployment web, Available and controlled by
// the parent (uid-1).
const availableWeb = `apiVersion: apps/v1
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
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`

// lookupConfigMap is a ConfigMap name that looks up the ConfigMap other.
func lookupConfigMap(name, other string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
data:
  other: {{ (lookup "v1" "ConfigMap" .Namespace "` + other + `") | toJson | quote }}
`
}

// loadSet loads a set from files (loom.yaml is added).
func loadSet(t *testing.T, files map[string]string) *render.Set {
	t.Helper()
	fsys := fstest.MapFS{config.File: {Data: []byte(loomYAML)}}
	for name, text := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	set, err := render.LoadFS(fsys, "app")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// objects reads a YAML stream of objects ("" is none).
func objects(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render.ReadParents(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// parent is the App web in default, with the uid its children's owners name.
func parent(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	return objects(t, "apiVersion: example.com/v1\nkind: App\nmetadata: {name: web, namespace: default, uid: uid-1}\n")[0]
}

// summary is a Result as names, for cmp.
type summary struct {
	Rendered []string
	Apply    []string
	Held     []string
	Waits    []string
	Cycles   []string
	Complete bool
}

func summarize(r *Result) summary {
	s := summary{Cycles: r.Plan.Cycles, Complete: r.Plan.Complete}
	for _, c := range r.Output.Children {
		s.Rendered = append(s.Rendered, c.GetKind()+" "+c.GetName())
	}
	for _, c := range r.Plan.Apply {
		s.Apply = append(s.Apply, c.GetKind()+" "+c.GetName())
	}
	for ref := range r.Plan.Held {
		s.Held = append(s.Held, ref.String())
	}
	sort.Strings(s.Held)
	for _, w := range r.Plan.Waits {
		s.Waits = append(s.Waits, w.Message)
	}
	return s
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		live  string // the objects the reader holds; "" is a nil reader
		want  summary
	}{
		{
			name:  "nothing looked up: every child is applied",
			files: map[string]string{"deployment.yaml": deployment},
			want:  summary{Rendered: []string{"Deployment web"}, Apply: []string{"Deployment web"}, Complete: true},
		},
		{
			name:  "a child that looks up one not there yet is held, not applied",
			files: map[string]string{"deployment.yaml": deployment, "config.yaml": configReadsWeb},
			want: summary{
				Rendered: []string{"ConfigMap web-config", "Deployment web"},
				Apply:    []string{"Deployment web"},
				Held:     []string{"ConfigMap default/web-config"},
				Waits:    []string{"ConfigMap web-config waits for Deployment web: not found yet"},
				Complete: true,
			},
		},
		{
			name:  "the child it looks up is Available: both are applied",
			files: map[string]string{"deployment.yaml": deployment, "config.yaml": configReadsWeb},
			live:  availableWeb,
			want: summary{
				Rendered: []string{"ConfigMap web-config", "Deployment web"},
				Apply:    []string{"ConfigMap web-config", "Deployment web"},
				Complete: true,
			},
		},
		{
			name:  "two children that look each other up are a cycle, both held",
			files: map[string]string{"a.yaml": lookupConfigMap("a", "b"), "b.yaml": lookupConfigMap("b", "a")},
			want: summary{
				Rendered: []string{"ConfigMap a", "ConfigMap b"},
				Held:     []string{"ConfigMap default/a", "ConfigMap default/b"},
				Cycles:   []string{"dependency cycle: ConfigMap a, ConfigMap b look each other up, so none of them can be created first"},
				Complete: true,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := loadSet(t, tt.files)
			var reader render.Reader // nil: lookups find nothing
			if tt.live != "" {
				reader = render.NewObjectsReader(objects(t, tt.live))
			}
			got, err := Plan(context.Background(), set, parent(t), reader, Options{Timeout: 30 * time.Second})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if got.Plan.Err != nil {
				t.Errorf("Plan.Err = %v, want nil", got.Plan.Err)
			}
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	hookErr := errors.New("keep the generated keys: the seed Secret is forbidden")
	tests := []struct {
		name    string
		files   map[string]string
		live    string
		opts    Options
		wantIs  []error  // errors.Is each
		wantHas []string // substrings of the error's text
	}{
		{
			name:    "a template that loops for ever stops at the timeout, with its cause",
			files:   map[string]string{"loop.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loop\n{{ range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}\n"},
			opts:    Options{Timeout: 50 * time.Millisecond, TimeoutCause: errors.New("it ran for 50ms (--timeout)")},
			wantIs:  []error{render.ErrDeadline},
			wantHas: []string{"loop.yaml:5", "it ran for 50ms (--timeout)"},
		},
		{
			name: "a file that fails although what it looked up is ready is broken, not waiting",
			files: map[string]string{"deployment.yaml": deployment, "config.yaml": `{{- $web := lookup "apps/v1" "Deployment" .Namespace "web" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  paused: {{ required "web is not paused" $web.spec.paused }}
`},
			live:    availableWeb,
			opts:    Options{Timeout: 30 * time.Second},
			wantHas: []string{"config.yaml:7", "web is not paused"},
		},
		{
			name:  "a hook's error stops the plan",
			files: map[string]string{"deployment.yaml": deployment},
			opts: Options{Hooks: []Hook{
				func(*unstructured.Unstructured, *render.Output) error { return hookErr },
				func(*unstructured.Unstructured, *render.Output) error { panic("a hook after a failed one ran") },
			}},
			wantIs: []error{hookErr},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := loadSet(t, tt.files)
			var reader render.Reader
			if tt.live != "" {
				reader = render.NewObjectsReader(objects(t, tt.live))
			}
			got, err := Plan(context.Background(), set, parent(t), reader, tt.opts)
			if err == nil {
				t.Fatalf("Plan = %+v, want an error", summarize(got))
			}
			if got != nil {
				t.Errorf("Plan returned a result with its error: %+v", summarize(got))
			}
			for _, target := range tt.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("err = %v, want one that is %v", err, target)
				}
			}
			for _, s := range tt.wantHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v, want it to say %q", err, s)
				}
			}
		})
	}
}

// Hooks run in order between the render and the decision: what they do to
// the children is what the plan applies.
func TestPlanHooks(t *testing.T) {
	set := loadSet(t, map[string]string{"deployment.yaml": deployment, "config.yaml": configReadsWeb})
	var calls []string
	label := func(p *unstructured.Unstructured, out *render.Output) error {
		calls = append(calls, "label "+p.GetName())
		for _, c := range out.Children {
			c.SetLabels(map[string]string{"bucket": "7"})
		}
		return nil
	}
	mark := func(p *unstructured.Unstructured, out *render.Output) error {
		calls = append(calls, "mark "+p.GetName())
		return nil
	}
	got, err := Plan(context.Background(), set, parent(t), nil, Options{Hooks: []Hook{label, mark}})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if diff := cmp.Diff([]string{"label web", "mark web"}, calls); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
	if len(got.Plan.Apply) != 1 || got.Plan.Apply[0].GetLabels()["bucket"] != "7" {
		t.Errorf("Apply = %v, want the Deployment the hook labelled", got.Plan.Apply)
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name string
		plan depend.Plan
		want []string
	}{
		{name: "nothing held", plan: depend.Plan{Complete: true}},
		{
			name: "waits, then cycles, each naming the parent",
			plan: depend.Plan{
				Waits:  []status.Wait{{Message: "ConfigMap web-config waits for Deployment web: not found yet"}, {Message: "config.yaml waits for Deployment web: not ready"}},
				Cycles: []string{"dependency cycle: ConfigMap a, ConfigMap b look each other up, so none of them can be created first"},
			},
			want: []string{
				"waiting: ConfigMap web-config waits for Deployment web: not found yet (App default/web)",
				"waiting: config.yaml waits for Deployment web: not ready (App default/web)",
				"dependency cycle: ConfigMap a, ConfigMap b look each other up, so none of them can be created first (App default/web)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Describe(tt.plan, "App default/web")); diff != "" {
				t.Errorf("Describe (-want +got):\n%s", diff)
			}
		})
	}
}
