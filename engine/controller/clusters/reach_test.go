package clusters

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/object"
)

// Unanswered tells a cluster that did not answer from one that answered
// with a refusal: only the first may stop a prune there, and only it is
// ClusterUnreachable.
func TestUnanswered(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name string
		err  error
		down bool
	}{
		{"connection refused", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), true},
		{"a deadline", fmt.Errorf("apply: %w", context.DeadlineExceeded), true},
		{"not watched", &childcache.NotWatchedError{Resource: cm, Err: errors.New("list: connection refused")}, true},
		{"server timeout", apierrors.NewServerTimeout(cm, "patch", 1), true},
		{"service unavailable", apierrors.NewServiceUnavailable("etcd"), true},
		{"invalid: an answer", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "web", nil), false},
		{"forbidden: an answer", apierrors.NewForbidden(cm, "web", errors.New("no")), false},
		{"kind not served there", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "Widget"}}, false},
		{"registration gone", fmt.Errorf("apply: %w: w1", ErrNotRegistered), false},
		{"exec not allowed", fmt.Errorf("cluster w1: %w", cluster.ErrExecNotAllowed), false},
		{"not adopted", &object.NotAdoptedError{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results := object.ChangeSet{
				{Ref: object.Ref{Name: "local", Cluster: ""}, Action: object.Failed, Err: tt.err},
				{Ref: object.Ref{Name: "ok", Cluster: "w2"}, Action: object.Unchanged},
				{Ref: object.Ref{Name: "web", Cluster: "w1"}, Action: object.Failed, Err: tt.err},
			}
			var want map[string]error
			if tt.down {
				want = map[string]error{"w1": tt.err}
			}
			if diff := cmp.Diff(want, Unanswered(results), cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("Unanswered (-want +got):\n%s", diff)
			}
		})
	}
}
