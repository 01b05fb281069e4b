package object

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRefString(t *testing.T) {
	tests := []struct {
		name string
		ref  Ref
		want string
	}{
		{"namespaced, grouped", Ref{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Namespace: "default", Name: "web"}, "Deployment.apps default/web"},
		{"core", Ref{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "ns", Name: "cfg"}, "ConfigMap ns/cfg"},
		{"cluster-scoped", Ref{GroupKind: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, Name: "r"}, "ClusterRole.rbac.authorization.k8s.io r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ref.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChangeSet(t *testing.T) {
	boom := errors.New("boom")
	cs := ChangeSet{
		{Action: Created}, {Action: Configured}, {Action: Unchanged}, {Action: Pruned}, {Action: Orphaned},
		{Action: Failed, Err: boom}, {Action: Failed, Err: errors.New("second")},
	}
	if got := cs.Writes(); got != 4 {
		t.Errorf("Writes() = %d, want 4 (created, configured, pruned, orphaned)", got)
	}
	if got := cs.Err(); got != boom {
		t.Errorf("Err() = %v, want the first failure %v", got, boom)
	}
	if got := (ChangeSet{{Action: Unchanged}}).Err(); got != nil {
		t.Errorf("Err() of a change set without failures = %v, want nil", got)
	}
}

// A child placed in a workload cluster is another object than the one of
// the same kind, namespace and name in the cluster Loom runs in.
func TestRefOfACluster(t *testing.T) {
	local := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web", "namespace": "team-a"}}}
	remote := local.DeepCopy()
	remote.SetAnnotations(map[string]string{AnnotationCluster: "eu-1"})
	if RefOf(local) == RefOf(remote) {
		t.Errorf("RefOf(local) == RefOf(remote) = %v, want two refs", RefOf(local))
	}
	for _, tt := range []struct {
		obj  *unstructured.Unstructured
		want string
	}{{local, "ConfigMap team-a/web"}, {remote, "ConfigMap team-a/web in cluster eu-1"}} {
		if got := RefOf(tt.obj).String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
