//go:build e2e

package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

const (
	// unrelatedObjects is how many ConfigMaps and Secrets (half each) the
	// test creates beside Loom's children.
	unrelatedObjects = 10000
	// unrelatedSize is the data in each: if Loom cached them, that alone
	// would be 20 MiB.
	unrelatedSize = 2048
	// maxRSSGrowth bounds how much Loom's resident memory may grow while
	// they are created.
	maxRSSGrowth = 8 << 20
)

// 10 000 ConfigMaps and Secrets that are not Loom's, created in the
// namespace Loom watches (a quarter of them with Loom's managed-by label,
// but not its ApplySet label): Loom's caches of ConfigMaps and Secrets
// select its children by label, so its memory does not move, and none of
// them causes a reconcile or a write.
func TestUnrelatedObjectsCostNothing(t *testing.T) {
	e := env.From(t)
	dir := t.TempDir()
	if err := testutil.CopyDir(filepath.Join(e.Root, "templates"), dir); err != nil {
		t.Fatal(err)
	}
	// A Secret child too, so that Loom watches Secrets.
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}-token\ndata:\n  token: {{ .Name | sha256sum | b64enc }}\n"
	if err := os.WriteFile(filepath.Join(dir, "myresource", "secret.yaml"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRun(t, dir)
	r.create(20, nil)
	r.finish(expect{timeout: 2 * time.Minute, perParent: 10, kinds: append(fullChildren, childKind{secretGVR, "Secret", "-token"})})

	reconciles := r.loom.reconciles(t)
	writes := r.meter.snapshot(t).sum(loomWrite)
	rss, hwm, err := r.loom.Memory()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	createUnrelated(t, r.ns, unrelatedObjects)
	t.Logf("%d ConfigMaps and Secrets created in %s", unrelatedObjects, time.Since(start).Round(100*time.Millisecond))
	// Nothing is expected to happen, so there is nothing to poll for: give
	// any watch event in flight the time to reach Loom.
	time.Sleep(5 * time.Second)
	rss2, hwm2, err := r.loom.Memory()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Loom's memory before and after: VmRSS %.1f → %.1f MiB, VmHWM %.1f → %.1f MiB", mib(rss), mib(rss2), mib(hwm), mib(hwm2))
	if n := r.loom.reconciles(t) - reconciles; n != 0 {
		t.Errorf("unrelated objects caused %v reconciles", n)
	}
	if n := r.meter.snapshot(t).sum(loomWrite) - writes; n != 0 {
		t.Errorf("unrelated objects caused %v of Loom's writes", n)
	}
	if rss2-rss > maxRSSGrowth || hwm2-hwm > maxRSSGrowth {
		t.Errorf("Loom's memory grew by %.1f MiB (VmRSS) and %.1f MiB (VmHWM) over %d unrelated objects; want at most %.0f MiB",
			mib(rss2-rss), mib(hwm2-hwm), unrelatedObjects, mib(maxRSSGrowth))
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// createUnrelated creates n/2 ConfigMaps and n/2 Secrets in ns from 32
// clients at once; the first error stops them.
func createUnrelated(t *testing.T, ns string, n int) {
	t.Helper()
	e := env.From(t)
	payload := strings.Repeat("u", unrelatedSize)
	err := testutil.ForEach(context.Background(), n, 32, func(ctx context.Context, i int) error {
		return createOneUnrelated(ctx, e, ns, i, payload)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// createOneUnrelated creates ConfigMap or Secret unrelated-<i>. A quarter
// of them, of both kinds, carry Loom's managed-by label, but not its
// ApplySet label.
func createOneUnrelated(ctx context.Context, e *env.Env, ns string, i int, payload string) error {
	meta := metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%d", i), Labels: map[string]string{"app": "unrelated"}}
	if i%8 < 2 {
		meta.Labels["app.kubernetes.io/managed-by"] = "loom"
	}
	var err error
	if i%2 == 0 {
		_, err = e.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"payload": payload}}, metav1.CreateOptions{})
	} else {
		_, err = e.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"payload": []byte(payload)}}, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("create unrelated object %d: %w", i, err)
	}
	return nil
}

// maxLookupRSSGrowth bounds how much Loom's resident memory may grow over
// 10 000 unrelated ConfigMaps while its set looks up ConfigMaps (issue 13:
// at most 20 MiB).
const maxLookupRSSGrowth = 20 << 20

// The shipped set looks up one ConfigMap per namespace (loom-platform);
// here each parent also looks up two more of its own, so that the set
// reads more names (41) than Loom gives informers of their own
// (maxNamedInformers, 32), and Loom watches the metadata of every
// ConfigMap it may read. 10 000 unrelated ConfigMaps of 2 KiB each (20 MiB
// of data) then cost only their metadata: Loom's resident memory grows by
// at most 20 MiB, and none of them causes a reconcile or a write. Loom's
// memory is measured as the converge benchmark measures it: bin/loom as
// its own process, VmRSS and VmHWM.
func TestUnrelatedConfigMapsUnderLookups(t *testing.T) {
	e := env.From(t)
	dir := t.TempDir()
	if err := testutil.CopyDir(filepath.Join(e.Root, "templates"), dir); err != nil {
		t.Fatal(err)
	}
	reads := "{{- $a := lookup \"v1\" \"ConfigMap\" .Namespace (printf \"%s-a\" .Name) }}\n" +
		"{{- $b := lookup \"v1\" \"ConfigMap\" .Namespace (printf \"%s-b\" .Name) }}\n"
	if err := os.WriteFile(filepath.Join(dir, "myresource", "reads.yaml"), []byte(reads), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRun(t, dir)
	r.create(20, nil)
	r.finish(expect{timeout: 2 * time.Minute, perParent: 10, kinds: fullChildren})
	reconciles := r.loom.reconciles(t)
	writes := r.meter.snapshot(t).sum(loomWrite)
	rss, hwm, err := r.loom.Memory()
	if err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("u", unrelatedSize)
	err = testutil.ForEach(context.Background(), unrelatedObjects, 32, func(ctx context.Context, i int) error {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%d", i), Labels: map[string]string{"app": "unrelated"}}
		_, err := e.Kube.CoreV1().ConfigMaps(r.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"payload": payload}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	rss2, hwm2, err := r.loom.Memory()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Loom's memory before and after %d unrelated ConfigMaps, with lookups: VmRSS %.1f → %.1f MiB, VmHWM %.1f → %.1f MiB",
		unrelatedObjects, mib(rss), mib(rss2), mib(hwm), mib(hwm2))
	if n := r.loom.reconciles(t) - reconciles; n != 0 {
		t.Errorf("unrelated ConfigMaps caused %v reconciles", n)
	}
	if n := r.meter.snapshot(t).sum(loomWrite) - writes; n != 0 {
		t.Errorf("unrelated ConfigMaps caused %v of Loom's writes", n)
	}
	if rss2-rss > maxLookupRSSGrowth || hwm2-hwm > maxLookupRSSGrowth {
		t.Errorf("Loom's memory grew by %.1f MiB (VmRSS) and %.1f MiB (VmHWM) over %d unrelated ConfigMaps; want at most %.0f MiB",
			mib(rss2-rss), mib(hwm2-hwm), unrelatedObjects, mib(maxLookupRSSGrowth))
	}
}
