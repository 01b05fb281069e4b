package offline

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/render"
)

// fleetSet is a set, written for these tests, that fans one parent out
// over the clusters its loom.yaml allows.
const fleetSet = "testdata/fleet"

// The registrations are read from the lookups file's Secrets in Loom's
// namespace, as the controller reads them from the cluster.
func TestClusters(t *testing.T) {
	const loomSecret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: w1\n  namespace: loom-system\n  labels: {loom.dev/cluster: w1, env: prod}\n"
	tests := []struct {
		name    string
		objects string
		loomNS  string
		want    []string // name/source
		wantErr error
	}{
		{name: "a Loom registration by stringData", objects: loomSecret + "stringData: {kubeconfig: x}\n", want: []string{"w1/loom"}},
		{name: "a Loom registration by data", objects: loomSecret + "data: {kubeconfig: eA==}\n", want: []string{"w1/loom"}},
		{name: "a Cluster API Secret",
			objects: "apiVersion: v1\nkind: Secret\ntype: cluster.x-k8s.io/secret\nmetadata:\n  name: c1-kubeconfig\n  namespace: loom-system\n  labels: {cluster.x-k8s.io/cluster-name: c1}\ndata: {value: eA==}\n",
			want:    []string{"c1/cluster-api"}},
		{name: "another namespace is Loom's", objects: loomSecret + "stringData: {kubeconfig: x}\n", loomNS: "loom", want: nil},
		{name: "a Secret that names no namespace is in the parents'", objects: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: w1\n  labels: {loom.dev/cluster: w1}\nstringData: {kubeconfig: x}\n", want: nil},
		{name: "a Secret that registers nothing", objects: "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: loom-system}\nstringData: {password: x}\n", want: nil},
		{name: "a registration without a kubeconfig", objects: loomSecret + "stringData: {value: x}\n", wantErr: cluster.ErrInvalidRegistration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader, err := ReadLookups(strings.NewReader(tt.objects), "default")
			if err != nil {
				t.Fatal(err)
			}
			ns := tt.loomNS
			if ns == "" {
				ns = DefaultLoomNamespace
			}
			regs, err := Clusters(reader, ns)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Clusters() = %v, want errors.Is %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range regs {
				got = append(got, r.Name+"/"+string(r.Source))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("registrations (-want +got):\n%s", diff)
			}
		})
	}
	if regs, err := Clusters(nil, DefaultLoomNamespace); err != nil || regs != nil {
		t.Errorf("Clusters(nil) = %v, %v; want none", regs, err)
	}
}

// The fleet set's golden case: one parent fanned out over the two prod
// clusters its lookups file registers (a Loom Secret and a Cluster API
// one), each child naming its cluster in loom.dev/cluster, and none in the
// dev cluster, in eu-2 (allowed by name, not registered) or in a cluster a
// Secret outside Loom's namespace claims.
func TestRunFleet(t *testing.T) {
	set, err := render.Load(fleetSet)
	if err != nil {
		t.Fatal(err)
	}
	results, err := RunOptions(set, Options{Timeout: DefaultTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Case != "fleet" || results[0].Failed() {
		t.Fatalf("results = %+v, want the case fleet passing", results)
	}
	golden := readFile(t, filepath.Join(fleetSet, render.TestsDir, "fleet"+GoldenSuffix))
	for _, want := range []string{"loom.dev/cluster: eu-1", "loom.dev/cluster: us-1", "clusters: eu-1,us-1"} {
		if !strings.Contains(golden, want) {
			t.Errorf("the golden file has no %q", want)
		}
	}
	// With another namespace for Loom's, no Secret registers a cluster:
	// nothing fans out, and the case no longer matches its golden file.
	results, err = RunOptions(set, Options{Timeout: DefaultTimeout, LoomNamespace: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Diff == "" || !strings.Contains(results[0].Diff, "-    loom.dev/cluster: eu-1") {
		t.Errorf("with --loom-namespace elsewhere: results = %+v, want a diff that loses the eu-1 child", results)
	}
}

// A child aimed at a registered cluster loom.yaml does not allow fails the
// render offline too, at its file and line.
func TestRenderFileClusterNotAllowed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := os.CopyFS(dir, os.DirFS(fleetSet)); err != nil {
		t.Fatal(err)
	}
	extra := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dev\n  annotations:\n    loom.dev/cluster: dev\n"
	if err := os.WriteFile(filepath.Join(dir, "dev.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := render.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = RenderFile(set, filepath.Join(dir, render.TestsDir, "fleet.yaml"), DefaultNamespace)
	want := `render Fleet team-a/hello: dev.yaml:6 (document 1) ConfigMap dev: cluster not allowed: loom.dev/cluster "dev": this set's loom.yaml clusters: allows only eu-1, us-1`
	if err == nil || err.Error() != want {
		t.Fatalf("RenderFile() = %v, want %q", err, want)
	}
}
