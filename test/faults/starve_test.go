//go:build e2e

package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

const (
	// starvationBound is how long the 497 healthy parents of the
	// starvation test may take to be Ready, from the first create. 500
	// parents without a fault take about 60 s on the 2-core development
	// machine while it runs nothing else.
	starvationBound = 3 * time.Minute
	// maxForbiddenAttempts bounds the applies of a child the API server
	// refuses with 403 (retried with backoff) over the starvation test:
	// the queue's backoff doubles from 5 ms, so a few minutes allow ~16
	// retries, and each event of the parent's other children (its
	// Deployment rolling out) adds one.
	maxForbiddenAttempts = 30
	// maxInvalidAttempts bounds the applies of a child the API server
	// refuses as invalid (422), which Loom does not retry until something
	// changes; each event of the parent's other children adds one.
	maxInvalidAttempts = 12
)

// Starvation: 500 parents, among them app-0, whose ConfigMap an admission
// policy always refuses (403 Forbidden, which Loom retries), app-1, whose
// ConfigMap the API server refuses as invalid (over 1 MiB: 422, which
// Loom does not retry), and app-2, whose spec changes every 100 ms. Every
// other parent is Ready within starvationBound; the refused children are
// applied a bounded number of times (backoff, no spinning), their parents
// say why they are Degraded, and app-2 converges on its last spec.
func TestStarvation(t *testing.T) {
	e := env.From(t)
	const parents = 500
	forbidden, invalid, churning := parentName(0), parentName(1), parentName(2)
	dir := t.TempDir()
	if err := testutil.CopyDir(filepath.Join(e.Root, "templates"), dir); err != nil {
		t.Fatal(err)
	}
	// Without the config checksum in the pod template, app-2's changes
	// touch its ConfigMap only, not a rollout every 100 ms.
	testutil.EditFile(t, filepath.Join(dir, "myresource", "deployment.yaml"),
		"        checksum/config: {{ .Spec.config | toJson | sha256sum }}", "        loom.test/config: changes-do-not-roll")
	r := newRun(t, dir)
	denyConfigMap(t, r.ns, forbidden+"-config")
	r.create(parents, func(i int, p *unstructured.Unstructured) {
		if i == 1 {
			_ = unstructured.SetNestedField(p.Object, strings.Repeat("x", 1100*1024), "spec", "config", "blob")
		}
	})
	churn := startChurn(t, r.ns, churning)
	failing := map[string]bool{forbidden: true, invalid: true, churning: true}
	took := waitReady(t, r.ns, parents-len(failing), failing, r.start, starvationBound)
	t.Logf("the %d other parents were Ready %s after the first create (bound %s)", parents-len(failing), took.Round(100*time.Millisecond), starvationBound)
	changes, last := churn.halt(t)
	t.Logf("%s's spec changed %d times", churning, changes)

	delete(failing, churning)
	r.finish(expect{timeout: starvationBound + time.Minute, perParent: 10, extra: 3 * float64(changes),
		kinds: fullChildren, failing: failing})
	configMap, err := e.Dyn.Resource(configMapGVR).Namespace(r.ns).Get(context.Background(), churning+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(configMap.Object, "data", "INDEX"); got != last {
		t.Errorf("%s's ConfigMap has INDEX %q, want its last spec's %q", churning, got, last)
	}
	for name, text := range map[string]string{forbidden: "always refused", invalid: "Too long"} {
		p, err := e.Dyn.Resource(myresGVR).Namespace(r.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st, reason, msg := testutil.Condition(p, "Degraded"); st != "True" || reason != "ApplyFailed" || !strings.Contains(msg, name+"-config") || !strings.Contains(msg, text) {
			t.Errorf("%s: Degraded=%s %s %q; want True ApplyFailed naming %s-config and saying %q", name, st, reason, msg, name, text)
		}
	}
	w := r.meter.snapshot(t).sub(r.before)
	refused := func(code string) float64 {
		return w.sum(func(k writeKey) bool { return k.verb == "APPLY" && k.resource == "configmaps" && k.code == code })
	}
	t.Logf("over %s: %s's ConfigMap applied %.0f times (403), %s's %.0f times (422)",
		time.Since(r.start).Round(time.Second), forbidden, refused("403"), invalid, refused("422"))
	if n := refused("403"); n == 0 || n > maxForbiddenAttempts {
		t.Errorf("%s's refused ConfigMap was applied %.0f times; want 1 to %d (retries with backoff)", forbidden, n, maxForbiddenAttempts)
	}
	if n := refused("422"); n == 0 || n > maxInvalidAttempts {
		t.Errorf("%s's invalid ConfigMap was applied %.0f times; want 1 to %d (not retried)", invalid, n, maxInvalidAttempts)
	}
}

// denyConfigMap installs a ValidatingAdmissionPolicy that refuses the
// ConfigMap name in namespace ns with 403 Forbidden, and waits until the
// API server enforces it. It is removed when the test ends.
func denyConfigMap(t *testing.T, ns, name string) {
	t.Helper()
	e := env.From(t)
	ctx := context.Background()
	policy := "faults-deny-" + ns
	manifests := fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: %[1]s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  validations:
  - expression: "object.metadata.name != '%[3]s'"
    reason: Forbidden
    message: "faults test: ConfigMap %[3]s is always refused"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: %[1]s}
spec:
  policyName: %[1]s
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %[2]s}}
`, policy, ns, name)
	for _, doc := range strings.Split(manifests, "\n---\n") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
		if obj.GetKind() == "ValidatingAdmissionPolicyBinding" {
			gvr.Resource = "validatingadmissionpolicybindings"
		}
		if _, err := e.Dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", obj.GetKind(), policy, err)
		}
		t.Cleanup(func() { _ = e.Dyn.Resource(gvr).Delete(context.Background(), policy, metav1.DeleteOptions{}) })
	}
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}}
	testutil.Eventually(t, 30*time.Second, "the admission policy refuses "+name, func(ctx context.Context) error {
		_, err := e.Dyn.Resource(configMapGVR).Namespace(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("a dry-run create got %v, want 403 Forbidden", err)
		}
		return nil
	})
}

// churn patches a parent's spec.config.INDEX every 100 ms.
type churn struct {
	changes atomic.Int64
	stop    chan struct{}
	done    chan error
}

func startChurn(t *testing.T, ns, name string) *churn {
	t.Helper()
	e := env.From(t)
	c := &churn{stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				c.done <- nil
				return
			case <-tick.C:
			}
			patch := fmt.Sprintf(`{"spec":{"config":{"INDEX":"churn-%d"}}}`, c.changes.Load()+1)
			if _, err := e.Dyn.Resource(myresGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				c.done <- fmt.Errorf("patch %s: %w", name, err)
				return
			}
			c.changes.Add(1)
		}
	}()
	t.Cleanup(func() {
		select {
		case <-c.stop:
		default:
			close(c.stop)
		}
	})
	return c
}

// halt stops the churn and returns how many changes it made, and the
// last INDEX value.
func (c *churn) halt(t *testing.T) (int64, string) {
	t.Helper()
	close(c.stop)
	if err := <-c.done; err != nil {
		t.Fatalf("the churn failed: %v", err)
	}
	n := c.changes.Load()
	return n, "churn-" + strconv.FormatInt(n, 10)
}
