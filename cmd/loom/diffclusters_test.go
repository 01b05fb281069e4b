package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/object"
)

func TestDiffPath(t *testing.T) {
	tests := []struct {
		ref        object.Ref
		live, rend string
	}{
		{ref: object.Ref{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "shop", Name: "web"},
			live: "live/ConfigMap/shop/web", rend: "rendered/ConfigMap/shop/web"},
		{ref: object.Ref{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Namespace: "shop", Name: "web", Cluster: "eu-1"},
			live: "live@eu-1/Deployment.apps/shop/web", rend: "rendered@eu-1/Deployment.apps/shop/web"},
		{ref: object.Ref{GroupKind: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, Name: "reader", Cluster: "eu-1"},
			live: "live@eu-1/ClusterRole.rbac.authorization.k8s.io/reader", rend: "rendered@eu-1/ClusterRole.rbac.authorization.k8s.io/reader"},
	}
	for _, tt := range tests {
		if got := diffPath("live", tt.ref); got != tt.live {
			t.Errorf("diffPath(live, %v) = %q, want %q", tt.ref, got, tt.live)
		}
		if got := diffPath("rendered", tt.ref); got != tt.rend {
			t.Errorf("diffPath(rendered, %v) = %q, want %q", tt.ref, got, tt.rend)
		}
	}
}

func TestUnanswered(t *testing.T) {
	timeout := &url.Error{Op: "Get", URL: "https://10.0.0.1/api", Err: context.DeadlineExceeded}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/api",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	forbidden := errors.New(`configmaps "web" is forbidden`)
	tests := []struct {
		name    string
		cluster string
		err     error
		want    string // "": nil
		down    bool   // a *clusterDownError
	}{
		{name: "no error", cluster: "w1"},
		{name: "the cluster of the parents", err: timeout, want: timeout.Error()},
		{name: "timeout", cluster: "w1", err: timeout, down: true,
			want: "cluster w1 did not answer within 3s (--cluster-timeout): " + timeout.Error()},
		{name: "refused", cluster: "w1", err: refused, down: true,
			want: "cluster w1 cannot be reached: " + refused.Error()},
		{name: "another error", cluster: "w1", err: forbidden, want: "cluster w1: " + forbidden.Error()},
		{name: "an error that names the cluster", cluster: "w1", err: fmt.Errorf("get ConfigMap shop/web in cluster w1: %w", forbidden),
			want: "get ConfigMap shop/web in cluster w1: " + forbidden.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unanswered(tt.cluster, 3*time.Second, tt.err)
			if tt.want == "" {
				if got != nil {
					t.Fatalf("unanswered() = %v, want nil", got)
				}
				return
			}
			if got == nil || got.Error() != tt.want {
				t.Fatalf("unanswered() = %v, want %q", got, tt.want)
			}
			var down *clusterDownError
			if errors.As(got, &down) != tt.down {
				t.Errorf("unanswered() is a clusterDownError: %v, want %v", !tt.down, tt.down)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("unanswered() does not wrap the request's error")
			}
		})
	}
}

// kubeconfig is a kubeconfig for server, whose user runs an exec plugin
// when exec is true.
func kubeconfig(server string, exec bool) []byte {
	user := "token: secret"
	if exec {
		user = "exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token, interactiveMode: Never}"
	}
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {%s}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server, user))
}

// TestWorkloadsAt checks how a diff reaches a workload cluster: only a
// registered one, with a kubeconfig Loom would accept, and a cluster that
// did not answer is not asked again.
func TestWorkloadsAt(t *testing.T) {
	reg := func(name string, kc []byte) cluster.Registration {
		return cluster.Registration{Name: name, Kubeconfig: kc, Secret: types.NamespacedName{Namespace: "loom-system", Name: name}}
	}
	regs := []cluster.Registration{
		reg("w1", kubeconfig("https://127.0.0.1:1", false)),
		reg("plugin", kubeconfig("https://127.0.0.1:1", true)),
		reg("twice", kubeconfig("https://127.0.0.1:1", false)),
		reg("twice", kubeconfig("https://127.0.0.1:2", false)),
	}
	w := newWorkloads(regs, cluster.Options{}, time.Second)
	if _, err := w.at("nope"); err == nil || err.Error() != "cluster nope: not registered" {
		t.Errorf("at(nope) error = %v, want not registered", err)
	}
	if _, err := w.at("twice"); err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Errorf("at(twice), a name two Secrets claim: error = %v, want not registered", err)
	}
	if _, err := w.at("plugin"); !errors.Is(err, cluster.ErrExecNotAllowed) {
		t.Errorf("at(plugin) error = %v, want %v", err, cluster.ErrExecNotAllowed)
	}
	if _, err := newWorkloads(regs, cluster.Options{AllowExec: true}, time.Second).at("plugin"); err != nil {
		t.Errorf("at(plugin) with --allow-kubeconfig-exec: %v", err)
	}
	p, err := w.at("w1")
	if err != nil || p.name != "w1" {
		t.Fatalf("at(w1) = %v, %v", p, err)
	}
	if again, _ := w.at("w1"); again != p {
		t.Error("at(w1) made the clients again")
	}
	w.fail("w1", errors.New("forbidden")) // answered: asked again
	if _, err := w.at("w1"); err != nil {
		t.Errorf("at(w1) after an error it answered = %v", err)
	}
	down := unanswered("w1", time.Second, context.DeadlineExceeded)
	w.fail("w1", down)
	if _, err := w.at("w1"); err != down {
		t.Errorf("at(w1) after it did not answer = %v, want %v", err, down)
	}
}

// TestPrunableAtWorkloadCluster checks that the children to prune in a
// workload cluster are found as the controller finds them there: the
// parent's ApplySet label and its loom.dev/owner, and the cluster's
// annotation; what renders there now stays.
func TestPrunableAtWorkloadCluster(t *testing.T) {
	parent := &unstructured.Unstructured{}
	parent.SetAPIVersion("example.loom.dev/v1alpha1")
	parent.SetKind("Fanout")
	parent.SetNamespace("shop")
	parent.SetName("web")
	parent.SetUID("uid-1")
	owner := "example.loom.dev/v1alpha1/Fanout/shop/web/uid-1"
	cm := func(name, cluster, ownedBy string) runtime.Object {
		ann := map[string]any{}
		if cluster != "" {
			ann[object.AnnotationCluster] = cluster
		}
		if ownedBy != "" {
			ann[object.AnnotationOwner] = ownedBy
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "shop", "annotations": ann,
				"labels": map[string]any{object.LabelPartOf: object.ParentApplySetID(parent)}},
		}}
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList",
	},
		cm("kept", "w1", owner),  // renders now
		cm("stale", "w1", owner), // no longer renders
		cm("foreign", "w1", strings.Replace(owner, "uid-1", "uid-2", 1)), // another parent's
		cm("unplaced", "", owner), // says no cluster: not a child there
	)
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	p := &place{name: "w1", client: client, applier: apply.New(client, mapper, "")}
	rendered := map[object.Ref]bool{{GroupKind: gvk.GroupKind(), Namespace: "shop", Name: "kept", Cluster: "w1"}: true}

	got, err := prunableAt(t.Context(), p, parent, map[schema.GroupVersionKind]bool{gvk: true}, rendered)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range got {
		names = append(names, o.GetName())
	}
	if diff := cmp.Diff([]string{"stale"}, names); diff != "" {
		t.Errorf("prunableAt() (-want +got):\n%s", diff)
	}
}
