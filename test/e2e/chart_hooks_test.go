//go:build e2e

package e2e

// A chart's hooks run once per release revision: a pre-upgrade Job with a
// fixed name (Helm's default delete policy, before-hook-creation) runs
// again on a values edit and gates the Deployment's change, a hook Job
// that the TTL controller deletes after it finishes is not created again,
// and a hook-succeeded hook is deleted once it succeeded, and not created
// again either.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

var hookAppGVR = schema.GroupVersionResource{Group: "hooks.e2e.loom.dev", Version: "v1", Resource: "hookapps"}

var hookChartFiles = map[string]string{
	"loom.yaml": `parent:
  apiVersion: hooks.e2e.loom.dev/v1
  kind: HookApp
chart: chart
`,
	"chart/Chart.yaml":  "apiVersion: v2\nname: hooked\nversion: 0.1.0\n",
	"chart/values.yaml": "tag: \"1.27\"\n",
	"chart/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers: [{name: web, image: "nginx:{{ .Values.tag }}"}]
`,
	"chart/templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: "migrate:{{ .Values.tag }}"
          args: [--revision, "{{ .Release.Revision }}", --upgrade, "{{ .Release.IsUpgrade }}"]
`,
	"chart/templates/notify.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-notify
  annotations:
    helm.sh/hook: post-upgrade
    helm.sh/hook-delete-policy: hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: notify, image: busybox}]
`,
	"chart/templates/welcome.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-welcome
  annotations:
    helm.sh/hook: post-install
    helm.sh/hook-delete-policy: before-hook-creation
spec:
  ttlSecondsAfterFinished: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: welcome, image: busybox}]
`,
}

// jobRun is a hook Job's image (which names the values it ran for), and
// whether it completed.
func jobRun(ctx context.Context, e *env.Env, ns, name string) (image string, complete bool, err error) {
	j, err := e.Get(ctx, jobGVR, ns, name)
	if err != nil {
		return "", false, err
	}
	conds, _, _ := unstructured.NestedSlice(j.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Complete" && m["status"] == "True" {
			complete = true
		}
	}
	cs, _, _ := unstructured.NestedSlice(j.Object, "spec", "template", "spec", "containers")
	if len(cs) == 1 {
		image, _ = cs[0].(map[string]any)["image"].(string)
	}
	return image, complete, nil
}

func deploymentImage(ctx context.Context, e *env.Env, ns, name string) (string, error) {
	d, err := e.Get(ctx, deployGVR, ns, name)
	if err != nil {
		return "", err
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		return "", fmt.Errorf("containers %v", cs)
	}
	image, _ := cs[0].(map[string]any)["image"].(string)
	return image, nil
}

func TestChartHooksRunOncePerRevision(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	newChartSet(t, "hooked", hookChartFiles, hookAppGVR).start(t, ns, loomOptions{})
	createObject(t, hookAppGVR, ns, "apiVersion: hooks.e2e.loom.dev/v1\nkind: HookApp\nmetadata:\n  name: a\nspec: {}\n")
	waitConditionGVR(t, hookAppGVR, ns, "a", "Ready", "True")

	// The install: revision 1, its pre-install run complete, the
	// Deployment at the default tag.
	if image, complete, err := jobRun(context.Background(), e, ns, "a-migrate"); err != nil || image != "migrate:1.27" || !complete {
		t.Fatalf("the migrate Job: image %q, complete %v, %v; want migrate:1.27, complete", image, complete, err)
	}
	if image, err := deploymentImage(context.Background(), e, ns, "a-web"); err != nil || image != "nginx:1.27" {
		t.Fatalf("the Deployment's image %q (%v), want nginx:1.27", image, err)
	}

	// The post-install hook ran, and the TTL controller deleted it once it
	// finished (ttlSecondsAfterFinished: 1).
	waitGone(t, jobGVR, ns, "a-welcome", "the TTL controller deleted it")
	// It is not created again: every reconcile since its deletion (the
	// delete event enqueues one at once, and its Record change another)
	// would have re-created it within a second; 10 s is many times that.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, err := e.Get(context.Background(), jobGVR, ns, "a-welcome"); !isNotFound(err) {
			t.Errorf("the TTL'd post-install hook was created again (%v): a hook runs once per revision", err)
			break
		}
	}
	waitConditionGVR(t, hookAppGVR, ns, "a", "Ready", "True")

	// A values edit is revision 2: the migrate Job is deleted and created
	// again (before-hook-creation), and the Deployment keeps its image
	// until that run completes.
	patchObject(t, hookAppGVR, ns, "a", `{"spec":{"tag":"1.28"}}`)
	sawRun := false
	eventually(t, 60*time.Second, "the Deployment reaches nginx:1.28", func(ctx context.Context) error {
		// Read the Job before the Deployment: when the Deployment has the
		// new image, the Job as read just before must be revision 2's and
		// complete already (or be complete by now, in the window between
		// the two reads: then the next check must see it so).
		run, complete, jobErr := jobRun(ctx, e, ns, "a-migrate")
		image, err := deploymentImage(ctx, e, ns, "a-web")
		if err != nil {
			return err
		}
		if jobErr == nil && run == "migrate:1.28" {
			sawRun = true
		}
		if image == "nginx:1.28" {
			if jobErr != nil || run != "migrate:1.28" || !complete {
				// One more read of the Job, to tell a late read from a
				// Deployment that did not wait.
				run2, complete2, err2 := jobRun(ctx, e, ns, "a-migrate")
				t.Errorf("the Deployment changed while the pre-upgrade Job was %q, complete %v (%v); now %q, %v (%v)", run, complete, jobErr, run2, complete2, err2)
			}
			return nil
		}
		return fmt.Errorf("image %s; migrate Job %q complete %v", image, run, complete)
	})
	if !sawRun {
		t.Error("the pre-upgrade Job of the new values (migrate:1.28) was never seen")
	}
	waitConditionGVR(t, hookAppGVR, ns, "a", "Ready", "True")
	p, err := e.Get(context.Background(), hookAppGVR, ns, "a")
	if err != nil {
		t.Fatal(err)
	}
	if rev, _, _ := unstructured.NestedInt64(p.Object, "status", "release", "revision"); rev != 2 {
		t.Errorf("status.release.revision %d, want 2", rev)
	}
	if j, err := e.Get(context.Background(), jobGVR, ns, "a-migrate"); err != nil || j.GetAnnotations()["loom.dev/hook-revision"] != "2" {
		t.Errorf("the migrate Job is not revision 2's run (%v)", err)
	}
	// The post-upgrade hook ran (the record says it succeeded), and its
	// delete policy, hook-succeeded, deleted it; it is not created again.
	eventually(t, 30*time.Second, "the post-upgrade hook is recorded Succeeded", func(ctx context.Context) error {
		p, err := e.Get(ctx, hookAppGVR, ns, "a")
		if err != nil {
			return err
		}
		hooks, _, _ := unstructured.NestedSlice(p.Object, "status", "release", "hooks")
		for _, h := range hooks {
			if m, _ := h.(map[string]any); m["name"] == "a-notify" && m["phase"] == "Succeeded" {
				return nil
			}
		}
		return fmt.Errorf("status.release.hooks %v", hooks)
	})
	waitGone(t, jobGVR, ns, "a-notify", "hook-succeeded")
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, err := e.Get(context.Background(), jobGVR, ns, "a-notify"); !isNotFound(err) {
			t.Errorf("the hook-succeeded hook was created again (%v)", err)
			break
		}
	}
	// The post-install hook does not run on an upgrade.
	if _, err := e.Get(context.Background(), jobGVR, ns, "a-welcome"); !isNotFound(err) {
		t.Errorf("the post-install hook ran on an upgrade: %v", err)
	}
}
