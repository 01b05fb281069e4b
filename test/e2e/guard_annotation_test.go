//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/test/env"
)

// requestLog records the paths of the GET requests that match.
type requestLog struct {
	next  http.RoundTripper
	match func(*http.Request) bool
	mu    sync.Mutex
	paths []string
}

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && l.match(r) {
		l.mu.Lock()
		l.paths = append(l.paths, r.URL.Path)
		l.mu.Unlock()
	}
	return l.next.RoundTrip(r)
}

func (l *requestLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.paths...)
}

// Whoever may write a parent may write its annotations, but not steer
// Loom's lists through them: kinds its set does not declare, added to
// loom.dev/cluster-kinds and loom.dev/orphan-kinds (with Loom's orphan
// finalizer added by hand too), are ignored, never listed (Nodes
// cluster-wide, Secrets), and the parent's deletion does not hang on them
// (Loom runs with the generated RBAC, which may list neither).
func TestGuardAnnotationsListOnlyDeclaredKinds(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	name := "loom-e2e-" + ns + "-web"
	deleteClusterObjects(t, name)
	log := &requestLog{match: func(r *http.Request) bool {
		p := r.URL.Path
		return strings.HasSuffix(p, "/nodes") || strings.HasSuffix(p, "/secrets")
	}}
	startLoom(t, clusterSet(t), ns, loomOptions{transport: func(rt http.RoundTripper) http.RoundTripper {
		log.next = rt
		return log
	}})
	stripFinalizers(t, ns)
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")

	patch := `{"metadata":{"finalizers":["loom.dev/cluster-children","loom.dev/orphan"],"annotations":{` +
		`"loom.dev/cluster-kinds":"ClusterRole.rbac.authorization.k8s.io,ClusterRoleBinding.rbac.authorization.k8s.io,Node,Secret",` +
		`"loom.dev/orphan-kinds":"Node,Secret"}}}`
	if _, err := e.Dyn.Resource(myresGVR).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The reconcile of that change settles the finalizers.
	waitCondition(t, ns, "web", "Ready", "True")
	deleteParent(t, ns, "web")
	waitGone(t, clusterRoleGVR, "", name, "its parent was deleted")
	waitGone(t, myresGVR, ns, "web", "its deletion does not wait on kinds the set does not declare")
	if got := log.seen(); len(got) > 0 {
		t.Errorf("Loom listed kinds its set does not declare: %v", got)
	}
}
