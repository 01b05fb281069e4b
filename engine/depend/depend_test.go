package depend

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
)

// The live Deployment web as a lookup returns it, in the states kstatus
// tells apart.
const (
	deploymentAvailable = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 2}
spec: {replicas: 2}
status:
  observedGeneration: 2
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`
	deploymentRollingOut = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 2}
spec: {replicas: 2}
status:
  observedGeneration: 2
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 0
  availableReplicas: 0
  unavailableReplicas: 2
  conditions:
  - {type: Available, status: "False", reason: MinimumReplicasUnavailable}
  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
`
	// databaseAvailable is Available but not Ready: kstatus waits for the
	// Ready condition, a readiness rule on Available does not.
	databaseAvailable = `apiVersion: example.com/v1
kind: Database
metadata: {name: db, namespace: default, generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: Provisioning}
  - {type: Available, status: "True", reason: Accepting}
`
)

// child returns a rendered child of kind ("Deployment", "ConfigMap",
// "Database") in namespace default.
func child(kind, name string) *unstructured.Unstructured {
	apiVersion := map[string]string{"Deployment": "apps/v1", "ConfigMap": "v1", "Database": "example.com/v1"}[kind]
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "default"},
	}}
}

// inCluster places a child in the workload cluster name.
func inCluster(c *unstructured.Unstructured, name string) *unstructured.Unstructured {
	c.SetAnnotations(map[string]string{object.AnnotationCluster: name})
	return c
}

// read is a lookup of kind/name in default that returned live (a YAML
// fixture; "" when nothing was found).
func read(t *testing.T, kind, name, live string) render.Read {
	t.Helper()
	c := child(kind, name)
	rd := render.Read{GVK: c.GroupVersionKind(), Namespace: "default", Name: name}
	if live != "" {
		objs, err := render.ReadParents(strings.NewReader(live))
		if err != nil || len(objs) != 1 {
			t.Fatalf("fixture: %v, %d objects", err, len(objs))
		}
		rd.Object = objs[0].Object
	}
	return rd
}

// configMapLive is a ConfigMap a lookup found; kstatus has it Current.
func configMapLive(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: default}\n"
}

// decision is a Plan in comparable form.
type decision struct {
	Apply    []string // "Kind name", in order
	Held     []string // sorted
	Waits    []string // "Kind default/name: message", or "-: message" for a file
	Cycles   []string
	Complete bool
	Err      string
}

func summarize(p Plan) decision {
	d := decision{Complete: p.Complete}
	for _, c := range p.Apply {
		d.Apply = append(d.Apply, c.GetKind()+" "+c.GetName())
	}
	for ref := range p.Held {
		d.Held = append(d.Held, ref.String())
	}
	sort.Strings(d.Held)
	for _, w := range p.Waits {
		who := "-"
		if w.Child != nil {
			who = w.Child.String()
		}
		d.Waits = append(d.Waits, who+": "+w.Message)
	}
	d.Cycles = p.Cycles
	if p.Err != nil {
		d.Err = p.Err.Error()
	}
	return d
}

func TestDecide(t *testing.T) {
	errBroken := errors.New("cm.yaml:6: web has no clusterIP yet")
	tests := []struct {
		name     string
		children []*unstructured.Unstructured
		reads    func(t *testing.T) [][]render.Read // parallel to children
		deferred func(t *testing.T) []render.Deferred
		rules    []config.ReadinessRule
		want     decision
	}{
		{
			name:     "no reads",
			children: []*unstructured.Unstructured{child("ConfigMap", "web-config"), child("Deployment", "web")},
			want:     decision{Apply: []string{"ConfigMap web-config", "Deployment web"}, Complete: true},
		},
		{
			name:     "reads a Deployment that is not there yet",
			children: []*unstructured.Unstructured{child("ConfigMap", "web-config"), child("Deployment", "web")},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{{read(t, "Deployment", "web", "")}, nil}
			},
			want: decision{
				Apply:    []string{"Deployment web"},
				Held:     []string{"ConfigMap default/web-config"},
				Waits:    []string{"ConfigMap default/web-config: ConfigMap web-config waits for Deployment web: not found yet"},
				Complete: true,
			},
		},
		{
			name:     "reads a Deployment that is not Available",
			children: []*unstructured.Unstructured{child("ConfigMap", "web-config"), child("Deployment", "web")},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{{read(t, "Deployment", "web", deploymentRollingOut)}, nil}
			},
			want: decision{
				Apply:    []string{"Deployment web"},
				Held:     []string{"ConfigMap default/web-config"},
				Waits:    []string{"ConfigMap default/web-config: ConfigMap web-config waits for Deployment web: Available: 0/2"},
				Complete: true,
			},
		},
		{
			name: "the same name in a workload cluster is another child: one waits, the other is applied",
			children: []*unstructured.Unstructured{child("ConfigMap", "web-config"), inCluster(child("ConfigMap", "web-config"), "eu-1"),
				child("Deployment", "web"), inCluster(child("Deployment", "web"), "eu-1")},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{{read(t, "Deployment", "web", "")}, nil, nil, nil}
			},
			want: decision{
				Apply:    []string{"ConfigMap web-config", "Deployment web", "Deployment web"},
				Held:     []string{"ConfigMap default/web-config"},
				Waits:    []string{"ConfigMap default/web-config: ConfigMap web-config waits for Deployment web: not found yet"},
				Complete: true,
			},
		},
		{
			name:     "reads an Available Deployment",
			children: []*unstructured.Unstructured{child("ConfigMap", "web-config"), child("Deployment", "web")},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{{read(t, "Deployment", "web", deploymentAvailable)}, nil}
			},
			want: decision{Apply: []string{"ConfigMap web-config", "Deployment web"}, Complete: true},
		},
		{
			name:     "a child that looks itself up does not wait for itself",
			children: []*unstructured.Unstructured{child("ConfigMap", "web-config")},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{{read(t, "ConfigMap", "web-config", "")}}
			},
			want: decision{Apply: []string{"ConfigMap web-config"}, Complete: true},
		},
		{
			name:     "reads of objects this parent does not render, and lists, do not wait",
			children: []*unstructured.Unstructured{child("ConfigMap", "web-config"), child("Deployment", "web")},
			reads: func(t *testing.T) [][]render.Read {
				list := read(t, "Deployment", "", "")
				return [][]render.Read{{read(t, "ConfigMap", "settings", ""), list}, nil}
			},
			want: decision{Apply: []string{"ConfigMap web-config", "Deployment web"}, Complete: true},
		},
		{
			name:     "a read at another version is of the same child",
			children: []*unstructured.Unstructured{child("ConfigMap", "web-config"), child("Deployment", "web")},
			reads: func(t *testing.T) [][]render.Read {
				rd := read(t, "Deployment", "web", "")
				rd.GVK = schema.GroupVersionKind{Group: "apps", Version: "v1beta2", Kind: "Deployment"}
				return [][]render.Read{{rd}, nil}
			},
			want: decision{
				Apply:    []string{"Deployment web"},
				Held:     []string{"ConfigMap default/web-config"},
				Waits:    []string{"ConfigMap default/web-config: ConfigMap web-config waits for Deployment web: not found yet"},
				Complete: true,
			},
		},
		{
			name:     "two children that look each other up are a cycle, though both exist",
			children: []*unstructured.Unstructured{child("ConfigMap", "a"), child("ConfigMap", "b"), child("Deployment", "web")},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{{read(t, "ConfigMap", "b", configMapLive("b"))}, {read(t, "ConfigMap", "a", configMapLive("a"))}, nil}
			},
			want: decision{
				Apply:    []string{"Deployment web"},
				Held:     []string{"ConfigMap default/a", "ConfigMap default/b"},
				Cycles:   []string{"dependency cycle: ConfigMap a, ConfigMap b look each other up, so none of them can be created first"},
				Complete: true,
			},
		},
		{
			name: "a three-cycle, and a child waiting on one of it",
			children: []*unstructured.Unstructured{
				child("ConfigMap", "a"), child("ConfigMap", "b"), child("ConfigMap", "c"), child("ConfigMap", "d"), child("Deployment", "web"),
			},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{
					{read(t, "ConfigMap", "b", "")},
					{read(t, "ConfigMap", "c", "")},
					{read(t, "ConfigMap", "a", "")},
					{read(t, "ConfigMap", "a", "")},
					nil,
				}
			},
			want: decision{
				Apply: []string{"Deployment web"},
				Held:  []string{"ConfigMap default/a", "ConfigMap default/b", "ConfigMap default/c", "ConfigMap default/d"},
				Waits: []string{"ConfigMap default/d: ConfigMap d waits for ConfigMap a: not found yet"},
				Cycles: []string{
					"dependency cycle: ConfigMap a, ConfigMap b, ConfigMap c look each other up, so none of them can be created first",
				},
				Complete: true,
			},
		},
		{
			name:     "readiness is judged on what was read: a reads b, ready, while b waits on c",
			children: []*unstructured.Unstructured{child("ConfigMap", "a"), child("ConfigMap", "b"), child("ConfigMap", "c")},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{{read(t, "ConfigMap", "b", configMapLive("b"))}, {read(t, "ConfigMap", "c", "")}, nil}
			},
			want: decision{
				Apply:    []string{"ConfigMap a", "ConfigMap c"},
				Held:     []string{"ConfigMap default/b"},
				Waits:    []string{"ConfigMap default/b: ConfigMap b waits for ConfigMap c: not found yet"},
				Complete: true,
			},
		},
		{
			name:     "a failed file that waits for a child not there yet",
			children: []*unstructured.Unstructured{child("Deployment", "web")},
			deferred: func(t *testing.T) []render.Deferred {
				return []render.Deferred{{File: "cm.yaml", Err: errBroken, Reads: []render.Read{read(t, "Deployment", "web", "")}}}
			},
			want: decision{
				Apply:    []string{"Deployment web"},
				Waits:    []string{"-: cm.yaml waits for Deployment web: not found yet"},
				Complete: false,
			},
		},
		{
			name:     "a failed file whose dependencies are all ready is broken",
			children: []*unstructured.Unstructured{child("Deployment", "web")},
			deferred: func(t *testing.T) []render.Deferred {
				return []render.Deferred{{File: "cm.yaml", Err: errBroken, Reads: []render.Read{read(t, "Deployment", "web", deploymentAvailable)}}}
			},
			want: decision{Apply: []string{"Deployment web"}, Complete: true, Err: errBroken.Error()},
		},
		{
			name:     "one failed file waits, another is broken",
			children: []*unstructured.Unstructured{child("Deployment", "web"), child("ConfigMap", "settings")},
			deferred: func(t *testing.T) []render.Deferred {
				return []render.Deferred{
					{File: "a.yaml", Err: errors.New("a.yaml:1: waiting"), Reads: []render.Read{read(t, "Deployment", "web", deploymentRollingOut)}},
					{File: "b.yaml", Err: errBroken, Reads: []render.Read{read(t, "ConfigMap", "settings", configMapLive("settings"))}},
				}
			},
			want: decision{
				Apply:    []string{"Deployment web", "ConfigMap settings"},
				Waits:    []string{"-: a.yaml waits for Deployment web: Available: 0/2"},
				Complete: false,
				Err:      errBroken.Error(),
			},
		},
		{
			name:     "a readiness rule makes an Available Deployment not ready",
			children: []*unstructured.Unstructured{child("ConfigMap", "web-config"), child("Deployment", "web")},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{{read(t, "Deployment", "web", deploymentAvailable)}, nil}
			},
			rules: []config.ReadinessRule{{Kind: "Deployment", Condition: "Synced"}},
			want: decision{
				Apply:    []string{"Deployment web"},
				Held:     []string{"ConfigMap default/web-config"},
				Waits:    []string{"ConfigMap default/web-config: ConfigMap web-config waits for Deployment web: condition Synced not reported yet"},
				Complete: true,
			},
		},
		{
			name:     "without the rule, kstatus waits for the Database's Ready condition",
			children: []*unstructured.Unstructured{child("ConfigMap", "db-config"), child("Database", "db")},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{{read(t, "Database", "db", databaseAvailable)}, nil}
			},
			want: decision{
				Apply:    []string{"Database db"},
				Held:     []string{"ConfigMap default/db-config"},
				Waits:    []string{"ConfigMap default/db-config: ConfigMap db-config waits for Database db: status InProgress"},
				Complete: true,
			},
		},
		{
			name:     "a readiness rule on Available makes the Database ready",
			children: []*unstructured.Unstructured{child("ConfigMap", "db-config"), child("Database", "db")},
			reads: func(t *testing.T) [][]render.Read {
				return [][]render.Read{{read(t, "Database", "db", databaseAvailable)}, nil}
			},
			rules: []config.ReadinessRule{{Kind: "Database", Condition: "Available"}},
			want:  decision{Apply: []string{"ConfigMap db-config", "Database db"}, Complete: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &render.Output{Children: tt.children, Reads: make([][]render.Read, len(tt.children))}
			if tt.reads != nil {
				out.Reads = tt.reads(t)
			}
			if tt.deferred != nil {
				out.Deferred = tt.deferred(t)
			}
			got := summarize(Decide(out, tt.rules))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

// Decide over what render really recorded: a ConfigMap whose template
// reads the Deployment it renders beside it.
func TestDecideAfterRender(t *testing.T) {
	set, err := render.LoadFS(fstest.MapFS{
		"loom.yaml": {Data: []byte("parent:\n  apiVersion: example.com/v1\n  kind: App\n")},
		"deployment.yaml": {Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
`)},
		"config.yaml": {Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  replicas: {{ dig "status" "availableReplicas" 0 (lookup "apps/v1" "Deployment" .Namespace "web") | quote }}
`)},
	}, "app")
	if err != nil {
		t.Fatal(err)
	}
	parents, err := render.ReadParents(strings.NewReader("apiVersion: example.com/v1\nkind: App\nmetadata: {name: web, namespace: default, uid: uid-1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	owned := strings.Replace(deploymentAvailable, "generation: 2}", "generation: 2, ownerReferences: [{apiVersion: example.com/v1, kind: App, name: web, uid: uid-1, controller: true}]}", 1)
	tests := []struct {
		name string
		live string
		want decision
	}{
		{
			name: "the Deployment is not there yet",
			want: decision{
				Apply:    []string{"Deployment web"},
				Held:     []string{"ConfigMap default/web-config"},
				Waits:    []string{"ConfigMap default/web-config: ConfigMap web-config waits for Deployment web: not found yet"},
				Complete: true,
			},
		},
		{
			name: "the Deployment is available",
			live: owned,
			want: decision{Apply: []string{"ConfigMap web-config", "Deployment web"}, Complete: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := render.ReadParents(strings.NewReader(tt.live))
			if err != nil {
				t.Fatal(err)
			}
			out, err := set.RenderWith(parents[0], render.NewObjectsReader(objs))
			if err != nil {
				t.Fatalf("RenderWith: %v", err)
			}
			if diff := cmp.Diff(tt.want, summarize(Decide(out, nil))); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}
