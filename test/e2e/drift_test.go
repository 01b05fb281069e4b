//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/loom-operator/loom/test/env"
)

var secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// driftSet renders, for a MyResource, children whose fields defeat a
// decision made by comparing values: a Secret written with stringData, an
// emptyDir volume, and strings that read as equal quantities.
var driftSet = map[string]string{
	"loom.yaml": "parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource}\n",
	"secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: '{{ .Name }}-secret'}
stringData: {password: s3cret}
`,
	"configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: '{{ .Name }}-cm'}
data: {level: "1", version: "1.10"}
`,
	"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: '{{ .Name }}'
  labels: {tier: web}
  annotations: {team: a}
spec:
  replicas: 1
  selector: {matchLabels: {app: '{{ .Name }}'}}
  template:
    metadata: {labels: {app: '{{ .Name }}'}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env: [{name: V, value: "1.10"}]
        volumeMounts: [{name: scratch, mountPath: /scratch}]
      volumes: [{name: scratch, emptyDir: {}}]
`,
}

// driftSetDir writes driftSet into a templates folder of its own.
func driftSetDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "drift"), driftSet)
	return dir
}

// startDriftParent runs a Loom over driftSet in ns and waits until the
// MyResource name is Ready.
func startDriftParent(t *testing.T, ns, name string) *loom {
	t.Helper()
	l := startLoom(t, driftSetDir(t), ns, loomOptions{})
	createParent(t, ns, `{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, metadata: {name: `+name+`}, spec: {image: x}}`)
	waitCondition(t, ns, name, "Ready", "True")
	return l
}

// update reads an object, lets edit change it, and writes it back with an
// Update (PUT), as kubectl edit does.
// A conflict (a controller wrote in between) reads and edits again.
func update(ctx context.Context, e *env.Env, gvr schema.GroupVersionResource, ns, name string, edit func(u *unstructured.Unstructured)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := e.Get(ctx, gvr, ns, name)
		if err != nil {
			return err
		}
		edit(u)
		_, err = e.Dyn.Resource(gvr).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
}

func patch(ctx context.Context, e *env.Env, gvr schema.GroupVersionResource, ns, name string, pt types.PatchType, body string) error {
	_, err := e.Dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, pt, []byte(body), metav1.PatchOptions{FieldManager: "intruder"})
	return err
}

// Loom decides "this child is unchanged" exactly: each edit below by
// another writer is reverted, and an edit of fields Loom does not set is
// left alone with no write. On the old code (values compared, with
// quantities and empty maps tolerated) the stringData, emptyDir and
// quantity cases were never reverted, and a volume source replaced by
// hand was not even seen.
func TestDriftIsDecidedExactly(t *testing.T) {
	t.Parallel()
	driftDecidedExactly(t, false)
}

// The same edits, each made while Loom is down, are repaired by the next
// Loom, which has no record of the last one's applies; the edits of fields
// Loom does not set, made while it is down, get no write from it either.
// On the old code the next Loom applied every child once.
func TestDriftWhileLoomIsDownIsDecidedExactly(t *testing.T) {
	t.Parallel()
	driftDecidedExactly(t, true)
}

// driftDecidedExactly makes the edits while Loom runs or, with restart,
// each while no Loom runs.
func driftDecidedExactly(t *testing.T, restart bool) {
	e := env.From(t)
	ns := e.NewNamespace(t)
	l := startDriftParent(t, ns, "d")
	ctx := context.Background()
	b64 := base64.StdEncoding.EncodeToString([]byte("s3cret"))
	tests := []struct {
		name  string
		gvr   schema.GroupVersionResource
		obj   string
		edit  func() error
		check func(u *unstructured.Unstructured) error
	}{
		{"Secret data edited by hand (rendered with stringData)", secretGVR, "d-secret",
			func() error {
				return update(ctx, e, secretGVR, ns, "d-secret", func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedField(u.Object, base64.StdEncoding.EncodeToString([]byte("hacked")), "data", "password")
				})
			},
			func(u *unstructured.Unstructured) error { return wantString(u, b64, "data", "password") }},
		{`ConfigMap value "1" patched to "01"`, configMapGVR, "d-cm",
			func() error {
				return patch(ctx, e, configMapGVR, ns, "d-cm", types.MergePatchType, `{"data":{"level":"01"}}`)
			},
			func(u *unstructured.Unstructured) error { return wantString(u, "1", "data", "level") }},
		{`ConfigMap value "1.10" patched to "1.1"`, configMapGVR, "d-cm",
			func() error {
				return patch(ctx, e, configMapGVR, ns, "d-cm", types.MergePatchType, `{"data":{"version":"1.1"}}`)
			},
			func(u *unstructured.Unstructured) error { return wantString(u, "1.10", "data", "version") }},
		{`env value "1.10" patched to "1.1"`, deployGVR, "d",
			func() error {
				return patch(ctx, e, deployGVR, ns, "d", types.StrategicMergePatchType,
					`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"V","value":"1.1"}]}]}}}}`)
			},
			func(u *unstructured.Unstructured) error {
				cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				env := cs[0].(map[string]any)["env"].([]any)
				if v := env[0].(map[string]any)["value"]; v != "1.10" {
					return fmt.Errorf("env V = %v", v)
				}
				return nil
			}},
		{"label removed by an Update", deployGVR, "d",
			func() error {
				return update(ctx, e, deployGVR, ns, "d", func(u *unstructured.Unstructured) {
					labels := u.GetLabels()
					delete(labels, "tier")
					u.SetLabels(labels)
				})
			},
			func(u *unstructured.Unstructured) error {
				if u.GetLabels()["tier"] != "web" {
					return fmt.Errorf("labels %v", u.GetLabels())
				}
				return nil
			}},
		{"annotation removed by an Update", deployGVR, "d",
			func() error {
				return update(ctx, e, deployGVR, ns, "d", func(u *unstructured.Unstructured) {
					ann := u.GetAnnotations()
					delete(ann, "team")
					u.SetAnnotations(ann)
				})
			},
			func(u *unstructured.Unstructured) error {
				if u.GetAnnotations()["team"] != "a" {
					return fmt.Errorf("annotations %v", u.GetAnnotations())
				}
				return nil
			}},
	}
	// down stops Loom before an edit, with restart; up starts a new one
	// after it.
	down := func() {
		if restart {
			l.stop(t)
		}
	}
	up := func() {
		if restart {
			l = startLoom(t, l.templates, ns, loomOptions{})
		}
	}
	for _, tt := range tests {
		before := l.counter(t, "loom_drift_reverted_total", nil)
		down()
		if err := tt.edit(); err != nil {
			t.Fatalf("%s: edit: %v", tt.name, err)
		}
		if restart {
			before = 0 // a new Loom counts from 0
		}
		up()
		var last error
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			u, err := e.Get(ctx, tt.gvr, ns, tt.obj)
			if err == nil {
				err = tt.check(u)
			}
			if last = err; last == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if last != nil {
			t.Errorf("%s: not reverted within 20s: %v", tt.name, last)
			continue
		}
		eventually(t, 10*time.Second, tt.name+": a DriftReverted repair is counted", func(context.Context) error {
			if n := l.counter(t, "loom_drift_reverted_total", nil); n <= before {
				return errNotYet
			}
			return nil
		})
	}

	// A volume source replaced by hand: Loom sees it (its emptyDir was
	// removed), but cannot put emptyDir back beside the other writer's
	// hostPath, which it does not own and does not delete: the API server
	// refuses two volume sources. The parent says so, naming the field,
	// until the hostPath is removed; then Loom restores its emptyDir.
	if err := patch(ctx, e, deployGVR, ns, "d", types.JSONPatchType,
		`[{"op":"replace","path":"/spec/template/spec/volumes/0","value":{"name":"scratch","hostPath":{"path":"/etc"}}}]`); err != nil {
		t.Fatal(err)
	}
	waitDegraded(t, myresGVR, ns, "d", "ApplyFailed", "Deployment d", "hostPath")
	waitEvent(t, ns, "d", "Warning", "ApplyFailed", "hostPath")
	if err := patch(ctx, e, deployGVR, ns, "d", types.JSONPatchType, `[{"op":"remove","path":"/spec/template/spec/volumes/0/hostPath"}]`); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Loom restores the emptyDir volume", func(ctx context.Context) error {
		u, err := e.Get(ctx, deployGVR, ns, "d")
		if err != nil {
			return err
		}
		vols, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "volumes")
		if len(vols) != 1 {
			return fmt.Errorf("volumes %v", vols)
		}
		if v := vols[0].(map[string]any); v["emptyDir"] == nil || v["hostPath"] != nil {
			return fmt.Errorf("volume %v", v)
		}
		return nil
	})
	waitCondition(t, ns, "d", "Ready", "True")

	// Fields Loom does not set are not Loom's business: no write.
	quiesce(t, 2*time.Second, func() float64 { return float64(l.writes.total.Load()) })
	l.writes.reset()
	down()
	if err := patch(ctx, e, configMapGVR, ns, "d-cm", types.MergePatchType, `{"metadata":{"labels":{"theirs":"yes"}},"data":{"extra":"x"}}`); err != nil {
		t.Fatal(err)
	}
	if err := patch(ctx, e, deployGVR, ns, "d", types.MergePatchType, `{"metadata":{"annotations":{"theirs":"x"}}}`); err != nil {
		t.Fatal(err)
	}
	up()
	if restart {
		eventually(t, 30*time.Second, "the new Loom decides every child", func(context.Context) error {
			if n := l.counter(t, "loom_child_changes_total", nil); n < 3 {
				return fmt.Errorf("%.0f of 3 children decided", n)
			}
			return nil
		})
	}
	time.Sleep(3 * time.Second)
	_, log := l.writes.snapshot()
	if n := writesTo(log, "configmaps/d-cm", false) + writesTo(log, "deployments/d", false); n != 0 {
		t.Errorf("%d writes to the children after edits of fields Loom does not set, want 0: %v", n, log)
	}
}

func wantString(u *unstructured.Unstructured, want string, path ...string) error {
	if got, _, _ := unstructured.NestedString(u.Object, path...); got != want {
		return fmt.Errorf("%v = %q, want %q", path, got, want)
	}
	return nil
}
