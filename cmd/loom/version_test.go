package main

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/internal/version"
)

// loomDeployment is a Deployment as Loom's chart labels it.
func loomDeployment(ns, name, ver, image string, replicas, ready int) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: ` + ns + `
  labels:
    app.kubernetes.io/name: loom
    app.kubernetes.io/version: "` + ver + `"
spec:
  replicas: ` + strconv.Itoa(replicas) + `
  template:
    metadata:
      labels:
        app.kubernetes.io/name: loom
    spec:
      containers:
      - name: sidecar
        image: busybox
      - name: loom
        image: ` + image + `
status:
  readyReplicas: ` + strconv.Itoa(ready) + `
`
}

// runVersion runs loom version with args against a fake cluster holding
// objs (nil: a test that must not reach any cluster), and returns stdout,
// stderr and the exit status.
func runVersion(t *testing.T, objs []string, react clienttesting.ReactionFunc, args ...string) (string, string, int) {
	t.Helper()
	o := &versionOptions{newClient: func(kubeTarget, time.Duration) (dynamic.Interface, error) {
		if objs == nil {
			t.Errorf("loom version %s reached for the cluster", strings.Join(args, " "))
			return nil, errors.New("no cluster in this test")
		}
		var us []runtime.Object
		for _, y := range objs {
			us = append(us, fromYAML(t, y))
		}
		c := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{deploymentsGVR: "DeploymentList"}, us...)
		if react != nil {
			c.PrependReactor("list", "deployments", react)
		}
		return c, nil
	}}
	cmd := failsWith(versionCommand(o), exitFailure)
	cmd.SilenceUsage = true
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	code := exitCode(cmd.ExecuteC())
	return out.String(), errOut.String(), code
}

func TestVersion(t *testing.T) {
	client := version.Get()
	system := loomDeployment("loom-system", "loom", "0.3.0", "ghcr.io/loom-operator/loom:0.3.0", 2, 1)
	shop := loomDeployment("shop", "loom", "0.2.0", "ghcr.io/loom-operator/loom:0.2.0", 1, 1)
	other := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n  labels: {app.kubernetes.io/name: web}\nspec: {}\n"
	forbidden := func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New(`User "dev" cannot list resource "deployments"`))
	}
	refused := func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	}
	allServers := []serverVersion{
		{Namespace: "loom-system", Name: "loom", Version: "0.3.0", Image: "ghcr.io/loom-operator/loom:0.3.0", ReadyReplicas: 1, Replicas: 2},
		{Namespace: "shop", Name: "loom", Version: "0.2.0", Image: "ghcr.io/loom-operator/loom:0.2.0", ReadyReplicas: 1, Replicas: 1},
	}
	tests := []struct {
		name     string
		objs     []string // nil: the test fails if the command reaches for a cluster
		react    clienttesting.ReactionFunc
		args     []string
		want     *versionReport // decoded from -o json or -o yaml
		wantOut  []string       // lines of the text output
		wantCode int
		wantErr  string
	}{
		{name: "--client never reaches the cluster", args: []string{"--client"},
			wantOut: []string{"Client: " + client.String()}},
		{name: "--client -o json", args: []string{"--client", "-o", "json"}, want: &versionReport{Client: client}},
		{name: "every namespace, sorted", objs: []string{shop, other, system}, args: []string{"-o", "json"},
			want: &versionReport{Client: client, Servers: allServers}},
		{name: "one namespace", objs: []string{shop, other, system}, args: []string{"-n", "shop", "-o", "yaml"},
			want: &versionReport{Client: client, Servers: allServers[1:]}},
		{name: "none installed: servers is empty, not absent", objs: []string{other}, args: []string{"-o", "json"},
			want: &versionReport{Client: client, Servers: []serverVersion{}}},
		{name: "text", objs: []string{system, shop}, wantOut: []string{
			"Client: " + client.String(),
			"Servers (Deployments labelled app.kubernetes.io/name=loom):",
			"NAMESPACE     NAME   VERSION   IMAGE                              READY",
			"loom-system   loom   0.3.0     ghcr.io/loom-operator/loom:0.3.0   1/2",
			"shop          loom   0.2.0     ghcr.io/loom-operator/loom:0.2.0   1/1",
		}},
		{name: "text, none installed", objs: []string{other}, args: []string{"-n", "shop"}, wantOut: []string{
			"Client: " + client.String(),
			"Servers: none (no Deployment labelled app.kubernetes.io/name=loom in namespace shop)",
		}},
		{name: "forbidden: the client, then exit 1", objs: []string{system}, react: forbidden, args: []string{"-o", "json"},
			want: &versionReport{Client: client}, wantCode: 1, wantErr: "forbidden"},
		{name: "forbidden, text: the hint", objs: []string{system}, react: forbidden,
			wantOut: []string{"Client: " + client.String()}, wantCode: 1, wantErr: "loom version needs list on deployments.apps"},
		{name: "unreachable", objs: []string{system}, react: refused,
			wantOut: []string{"Client: " + client.String()}, wantCode: 1, wantErr: "connection refused"},
		{name: "unknown -o", args: []string{"-o", "table"}, wantCode: 1, wantErr: `unknown output format "table"`},
		{name: "an argument", args: []string{"extra"}, wantCode: 1, wantErr: "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runVersion(t, tt.objs, tt.react, tt.args...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) || (tt.wantErr == "" && errOut != "") {
				t.Fatalf("exit %d, want %d with %q on stderr:\n%s", code, tt.wantCode, tt.wantErr, errOut)
			}
			if tt.want != nil {
				var got versionReport // cmp tells servers: [] from no servers
				if err := yaml.UnmarshalStrict([]byte(out), &got); err != nil {
					t.Fatalf("%v:\n%s", err, out)
				}
				if diff := cmp.Diff(tt.want, &got); diff != "" {
					t.Errorf("loom version (-want +got):\n%s", diff)
				}
				return
			}
			var lines []string
			if out != "" {
				lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			}
			if diff := cmp.Diff(tt.wantOut, lines); diff != "" {
				t.Errorf("loom version (-want +got):\n%s", diff)
			}
		})
	}
}
