package env

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/loom-operator/loom/internal/testutil"
)

// NewNamespace creates a namespace for one test and deletes it, with the
// TemplateSets and TemplateRevisions of a Loom that watched it, when the
// test ends. With Options.Settle the cleanup also waits until the
// namespace is gone, so that the next test's write counts do not include
// its deletes.
func (e *Env) NewNamespace(t *testing.T) string {
	t.Helper()
	created, err := e.Kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: e.opts.NamespacePrefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	ns := created.Name
	if e.opts.Settle {
		t.Cleanup(func() { e.deleteAndSettle(t, ns) })
		return ns
	}
	t.Cleanup(func() {
		err := e.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
		if err := testutil.DeleteRollouts(context.Background(), e.Dyn, ns); err != nil {
			t.Errorf("%v", err)
		}
	})
	return ns
}

// deleteAndSettle deletes the namespace ns and its rollouts, and waits
// until it is gone.
func (e *Env) deleteAndSettle(t *testing.T, ns string) {
	ctx := context.Background()
	if err := testutil.DeleteRollouts(ctx, e.Dyn, ns); err != nil {
		t.Errorf("%v", err)
	}
	start := time.Now()
	if err := e.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete namespace %s: %v", ns, err)
		return
	}
	// Pods wait out their 30 s grace period (kwok plays no kubelet to
	// end it sooner), and so would the namespace: remove them now. A
	// terminating namespace takes no new pods.
	zero := int64(0)
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		_ = e.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_, err := e.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("namespace %s still there 5 minutes after its deletion", ns)
		return
	}
	t.Logf("namespace %s deleted in %s", ns, time.Since(start).Round(time.Second))
}
