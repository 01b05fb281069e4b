//go:build e2e

package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// restoreTimeout bounds how long Loom may take to repair its children
// after the restore: the API server is back by then, and Loom's watches
// relist within seconds of it.
const restoreTimeout = 3 * time.Minute

// An etcd snapshot restore takes the cluster back in time, and its
// resourceVersions with it. Here the snapshot holds parents whose spec
// changed while no Loom ran, with the children an earlier Loom wrote; a
// Loom started after the snapshot applies the new specs, and then the
// snapshot is restored under it. Its children are back as the earlier Loom
// left them, at resourceVersions below those of its own writes: Loom must
// repair them, without a restart. A Loom that reads resourceVersions as
// numbers takes its cache for one that lags behind its writes and leaves
// the children stale until they are written at a higher revision, which
// nobody does.
//
// A restore alone does not show clients the restored objects: their
// watches resume from the revision they had reached, which the restored
// history passes sooner or later, and from then on they see only new
// writes (this is why Kubernetes asks for its components to be restarted
// after a restore). Here, as after a compaction, the restored history is
// written past that revision, compacted, and the API server restarted:
// Loom's watches are refused ("too old resource version") and relist, so
// its cache holds the restored children. The test checks that they did.
func TestEtcdRestoreUnderLoom(t *testing.T) {
	e := env.From(t)
	const parents = 5
	templates := filepath.Join(e.Root, "templates")
	ns := e.NewNamespace(t)
	start := time.Now()
	first := startLoom(t, templates, ns)
	createParents(t, ns, parents, nil)
	waitReady(t, ns, parents, nil, start, 2*time.Minute)
	first.Stop(t, 30*time.Second)

	// 1. The specs change while no Loom runs; the snapshot holds them,
	//    and the ConfigMaps as the first Loom wrote them.
	setIndexes(t, ns, parents, "changed-")
	snap := filepath.Join(t.TempDir(), "etcd")
	clusterScript(t, "snapshot", snap)

	// 2. A new Loom applies the new specs, and goes quiet (its watches
	//    delivered its writes).
	second := startLoom(t, templates, ns, "-v=4")
	waitIndexes(t, ns, parents, "changed-", "the second Loom applied the new specs")
	waitReady(t, ns, parents, nil, time.Now(), 2*time.Minute)
	quiesceLoom(t, second)
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-after-the-snapshot"}}
	marker, err := e.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), marker, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// 3. Restore the snapshot under the running Loom, and make its
	//    watches relist.
	clusterScript(t, "restore", snap)
	if _, err := e.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), marker.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap %s, written after the snapshot, is still there after the restore (err %v): the restore did not happen", marker.Name, err)
	}
	writePast(t, ns, marker.ResourceVersion)
	rev := clusterScript(t, "compact")
	clusterScript(t, "restart", "kube-apiserver")
	restored := time.Now()
	waitIndexes(t, ns, parents, "changed-", "Loom repaired the ConfigMaps the restore took back")
	waitReady(t, ns, parents, nil, restored, restoreTimeout)
	second.mustRun(t)
	t.Logf("Loom repaired its children %s after the API server came back", time.Since(restored).Round(100*time.Millisecond))
	relisted := 0
	for _, l := range strings.Split(second.Output(), "\n") {
		if strings.Contains(l, "too old resource version") && strings.Contains(l, "Resource=configmaps") {
			relisted++
		}
	}
	if relisted == 0 {
		t.Fatalf("Loom's watch of ConfigMaps did not end with 410 Gone after the compaction at revision %s: the fault did not happen", rev)
	}
}

// writePast writes in ns, to a ConfigMap of its own, until the cluster's
// revision is past rv, which the cluster held before a restore. Reading a
// resourceVersion as a number is right here, and only here: the test knows
// the API server stores in etcd, whose resourceVersions are revisions.
func writePast(t *testing.T, ns, rv string) {
	t.Helper()
	e := env.From(t)
	past, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not an etcd revision: %v", rv, err)
	}
	cm, err := e.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-after-the-restore"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	for n, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64); n <= past+10; n, _ = strconv.ParseInt(cm.ResourceVersion, 10, 64) {
		writes++
		cm, err = e.Kube.CoreV1().ConfigMaps(ns).Patch(context.Background(), cm.Name, types.MergePatchType,
			[]byte(fmt.Sprintf(`{"data":{"n":"%d"}}`, writes)), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("write after the restore: %v", err)
		}
	}
	t.Logf("%d writes after the restore took the revision from below %s to %s", writes, rv, cm.ResourceVersion)
}

// setIndexes sets spec.config.INDEX of parents app-0 … app-<n-1> to
// prefix + i, which their ConfigMap carries.
func setIndexes(t *testing.T, ns string, n int, prefix string) {
	t.Helper()
	e := env.From(t)
	for i := range n {
		patch := fmt.Sprintf(`{"spec":{"config":{"INDEX":%q}}}`, prefix+strconv.Itoa(i))
		if _, err := e.Dyn.Resource(myresGVR).Namespace(ns).Patch(context.Background(), parentName(i), types.MergePatchType,
			[]byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("change the spec of %s: %v", parentName(i), err)
		}
	}
}

// waitIndexes waits until the ConfigMap of each of parents app-0 …
// app-<n-1> carries INDEX prefix + i.
func waitIndexes(t *testing.T, ns string, n int, prefix, what string) {
	t.Helper()
	e := env.From(t)
	testutil.Poll(t, time.Second, restoreTimeout, what, func(ctx context.Context) error {
		for i := range n {
			name := parentName(i) + configMapChild.suffix
			cm, err := e.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if want := prefix + strconv.Itoa(i); cm.Data["INDEX"] != want {
				return fmt.Errorf("ConfigMap %s at resourceVersion %s has INDEX %q, want %q", name, cm.ResourceVersion, cm.Data["INDEX"], want)
			}
		}
		return nil
	})
}
