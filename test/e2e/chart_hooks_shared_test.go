//go:build e2e

package e2e

// A hook is decided only on the object this parent owns: a second parent
// whose chart names its hook as the first one's does (a literal name)
// finds the first one's Job in the shared child cache, and must neither
// delete it (before-hook-creation of an "older run") nor take it for its
// own run.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

var sharedHookGVR = schema.GroupVersionResource{Group: "sharedhooks.e2e.loom.dev", Version: "v1", Resource: "sharedhookapps"}

func TestChartHookOfAnotherParentIsNotTouched(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	set := newChartSet(t, "shared", map[string]string{
		"loom.yaml":         "parent:\n  apiVersion: sharedhooks.e2e.loom.dev/v1\n  kind: SharedHookApp\nchart: chart\n",
		"chart/Chart.yaml":  "apiVersion: v2\nname: shared\nversion: 0.1.0\n",
		"chart/values.yaml": "tag: \"1\"\n",
		"chart/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  tag: "{{ .Values.tag }}"
`,
		"chart/templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: shared-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "migrate:{{ .Values.tag }}"}]
`,
	}, sharedHookGVR)
	set.start(t, ns, loomOptions{})
	// Parent a installs, then upgrades: its Job is revision 2's run.
	createObject(t, sharedHookGVR, ns, "apiVersion: sharedhooks.e2e.loom.dev/v1\nkind: SharedHookApp\nmetadata:\n  name: a\nspec: {}\n")
	waitConditionGVR(t, sharedHookGVR, ns, "a", "Ready", "True")
	patchObject(t, sharedHookGVR, ns, "a", `{"spec":{"tag":"2"}}`)
	eventually(t, 60*time.Second, "a's migrate Job is revision 2's run, complete", func(ctx context.Context) error {
		image, complete, err := jobRun(ctx, e, ns, "shared-migrate")
		if err != nil {
			return err
		}
		if image != "migrate:2" || !complete {
			return fmt.Errorf("image %s, complete %v", image, complete)
		}
		return nil
	})
	waitConditionGVR(t, sharedHookGVR, ns, "a", "Ready", "True")
	job, err := e.Get(context.Background(), jobGVR, ns, "shared-migrate")
	if err != nil {
		t.Fatal(err)
	}
	uid := job.GetUID()

	// Parent b renders the same Job at its revision 1: a's Job is no run
	// of b's, older or not.
	createObject(t, sharedHookGVR, ns, "apiVersion: sharedhooks.e2e.loom.dev/v1\nkind: SharedHookApp\nmetadata:\n  name: b\nspec: {}\n")
	eventually(t, 60*time.Second, "b reports the Job as another's", func(ctx context.Context) error {
		p, err := e.Get(ctx, sharedHookGVR, ns, "b")
		if err != nil {
			return err
		}
		status, reason, msg := condition(p, "Degraded")
		if status == "True" && strings.Contains(msg, "shared-migrate") {
			return nil
		}
		return fmt.Errorf("Degraded %s %s: %s", status, reason, msg)
	})
	// b's reconciles since it was created (each within a second of the
	// last) had every chance to delete a's Job; 10 s is many of them.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		j, err := e.Get(context.Background(), jobGVR, ns, "shared-migrate")
		if err != nil || j.GetUID() != uid {
			t.Fatalf("a's migrate Job was deleted by b's before-hook-creation (now %v)", err)
		}
	}
	if _, err := e.Get(context.Background(), configMapGVR, ns, "b-config"); !isNotFound(err) {
		t.Errorf("b's ConfigMap was applied although b's pre-install hook never ran (%v): a's run was taken for b's", err)
	}
}
