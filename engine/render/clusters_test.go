package render

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render/placement"
)

// clustersConfig is a loom.yaml whose set may use the prod clusters.
const clustersConfig = testConfig + `clusters:
  names: [eu-2]
  selector: {matchLabels: {env: prod}}
`

// registered are the registrations the tests' renders are given: two prod
// clusters and a dev one.
var registered = []cluster.Registration{
	{Name: "us-1", Labels: map[string]string{"env": "prod", "region": "us"}},
	{Name: "eu-1", Labels: map[string]string{"env": "prod", "region": "eu"}},
	{Name: "dev", Labels: map[string]string{"env": "dev"}},
}

// fanOut renders one ConfigMap per cluster the set may use, named as the
// parent, and one in the cluster Loom runs in.
const fanOut = `{{- range .Clusters }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Name }}
  annotations:
    loom.dev/cluster: {{ .Name }}
data:
  region: {{ .Labels.region }}
{{- end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}
data:
  region: home
`

// renderPlaced renders app(spec) with files, its loom.yaml config, and
// the registrations regs.
func renderPlaced(t *testing.T, cfg string, files map[string]string, spec string) (*Output, error) {
	t.Helper()
	files["loom.yaml"] = cfg
	s := loadSet(t, files)
	clusters, err := placement.New(registered, s.Config.Clusters)
	if err != nil {
		t.Fatal(err)
	}
	return s.RenderPlaced(context.Background(), app(t, spec), nil, clusters)
}

// Children are placed where their loom.dev/cluster annotation says, only
// in clusters the set may use, and are duplicates only within a cluster.
func TestRenderPlaced(t *testing.T) {
	tests := []struct {
		name    string
		cfg     string
		files   map[string]string
		spec    string
		want    []string // cluster/kind/name/data.region
		wantErr string
		wantIs  error
	}{
		{name: "a fan-out over the allowed clusters", cfg: clustersConfig, files: map[string]string{"a.yaml": fanOut},
			want: []string{"eu-1/ConfigMap/web/eu", "us-1/ConfigMap/web/us", "/ConfigMap/web/home"}},
		{name: "no clusters: in loom.yaml, no fan-out", cfg: testConfig, files: map[string]string{"a.yaml": fanOut},
			want: []string{"/ConfigMap/web/home"}},
		{name: "no annotation is the local cluster", cfg: clustersConfig, files: map[string]string{"a.yaml": configMap("web", "  region: home\n")},
			want: []string{"/ConfigMap/web/home"}},
		{name: "a cluster the set may not use, from the spec", cfg: clustersConfig, spec: "  cluster: dev\n",
			files: map[string]string{"a.yaml": configMap("ok", "  region: home\n") + "---\n" +
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  annotations:\n    loom.dev/cluster: {{ .Spec.cluster }}\ndata:\n  region: x\n"},
			wantIs:  placement.ErrNotAllowed,
			wantErr: `a.yaml:13 (document 2) ConfigMap web: cluster not allowed: loom.dev/cluster "dev": this set's loom.yaml clusters: allows only eu-1, us-1`},
		{name: "a named cluster that is not registered", cfg: clustersConfig,
			files:   map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  annotations:\n    loom.dev/cluster: eu-2\n"},
			wantIs:  placement.ErrNotRegistered,
			wantErr: `a.yaml:6 (document 1) ConfigMap web: cluster not registered: loom.dev/cluster "eu-2": no Secret in Loom's namespace registers a cluster of that name`},
		{name: "a cluster without clusters: in loom.yaml", cfg: testConfig,
			files:   map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  annotations:\n    loom.dev/cluster: eu-1\n"},
			wantIs:  placement.ErrNotAllowed,
			wantErr: `a.yaml:6 (document 1) ConfigMap web: cluster not allowed: loom.dev/cluster "eu-1": this set's loom.yaml has no clusters:, so its children may go only to the cluster Loom runs in`},
		{name: "the same name in one remote cluster twice", cfg: clustersConfig,
			files: map[string]string{
				"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  annotations:\n    loom.dev/cluster: eu-1\n",
				"b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  annotations: {loom.dev/cluster: eu-1}\n"},
			wantErr: `b.yaml:1 (document 1) ConfigMap web: ConfigMap "web" in cluster eu-1 is also rendered by a.yaml:1 (document 1); child names must be unique per kind`},
		{name: "the same name in the local cluster twice", cfg: clustersConfig,
			files:   map[string]string{"a.yaml": fanOut, "b.yaml": configMap("web", "  region: again\n")},
			wantErr: `b.yaml:1 (document 1) ConfigMap web: ConfigMap "web" is also rendered by a.yaml:1 (document 4); child names must be unique per kind`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := renderPlaced(t, tt.cfg, tt.files, tt.spec)
			if tt.wantErr != "" {
				var re *Error
				if !errors.As(err, &re) {
					t.Fatalf("RenderPlaced() = %v, want an *Error", err)
				}
				if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
					t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("RenderPlaced() = %v", err)
			}
			var got []string
			for _, c := range out.Children {
				region, _, _ := unstructured.NestedString(c.Object, "data", "region")
				got = append(got, object.TargetCluster(c)+"/"+c.GetKind()+"/"+c.GetName()+"/"+region)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
		})
	}
}

// A selector loom.yaml's clusters cannot hold fails the set's load, naming
// loom.yaml.
func TestLoadBadClusterSelector(t *testing.T) {
	_, err := LoadFS(fsOf(map[string]string{
		"loom.yaml": testConfig + "clusters:\n  selector: {matchExpressions: [{key: env, operator: Near}]}\n",
		"a.yaml":    configMap("web", "  k: v\n"),
	}), "testset")
	want := `loom.yaml: clusters.selector: "Near" is not a valid label selector operator`
	if err == nil || err.Error() != want {
		t.Fatalf("LoadFS() = %v, want %q", err, want)
	}
}

// Lookups read the cluster Loom runs in: a lookup of an undeclared kind
// may read this parent's children there, not an object of the name of a
// child it places in another cluster.
func TestLookupOfARemoteChild(t *testing.T) {
	child := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n%s" +
		"spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}\n"
	read := outFile(`{{ (lookup "apps/v1" "Deployment" .Namespace "web").status.readyReplicas }}`)
	tests := []struct {
		name, annotations, wantErr string
	}{
		{name: "the child is local"},
		{name: "the child is in another cluster", annotations: "  annotations: {loom.dev/cluster: eu-1}\n", wantErr: "lookup refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"loom.yaml": clustersConfig, "a.yaml": strings.Replace(child, "%s", tt.annotations, 1), "out.yaml": read}
			s := loadSet(t, files)
			clusters, err := placement.New(registered, s.Config.Clusters)
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.RenderPlaced(context.Background(), app(t, ""), lookupReader(t), clusters)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("RenderPlaced() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := dataOf(t, out.Children, "out", "got"); got != "3" {
				t.Errorf("out's data.got = %q, want 3", got)
			}
		})
	}
}

// A child placed in another cluster gets no ownerReference (none can
// cross clusters, and the garbage collector there would delete it at
// once, its owner not found): its parent is named by loom.dev/owner and
// its UID by a label, beside the ApplySet labels; a local child keeps its
// controller reference.
func TestInjectRemote(t *testing.T) {
	out, err := renderPlaced(t, clustersConfig, map[string]string{"a.yaml": fanOut}, "")
	if err != nil {
		t.Fatal(err)
	}
	type marks struct {
		Owners      int
		Owner       string
		ParentUID   string
		PartOf      string
		ManagedBy   string
		ClusterNote string
	}
	var got []marks
	for _, c := range out.Children {
		got = append(got, marks{
			Owners: len(c.GetOwnerReferences()), Owner: c.GetAnnotations()[object.AnnotationOwner],
			ParentUID: c.GetLabels()[object.LabelParentUID], PartOf: c.GetLabels()[object.LabelPartOf],
			ManagedBy: c.GetLabels()[object.LabelManagedBy], ClusterNote: object.TargetCluster(c),
		})
	}
	remote := func(cl string) marks {
		return marks{Owner: "example.com/v1/App/default/web/uid-1", ParentUID: "uid-1", PartOf: webAppSetID, ManagedBy: "loom", ClusterNote: cl}
	}
	want := []marks{remote("eu-1"), remote("us-1"), {Owners: 1, PartOf: webAppSetID, ManagedBy: "loom"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children's marks (-want +got):\n%s", diff)
	}
}
