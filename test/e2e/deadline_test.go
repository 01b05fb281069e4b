//go:build e2e

package e2e

import (
	"path/filepath"
	"testing"
	"time"
)

// A template that loops for ever holds one worker only until its render's
// deadline (half the reconcile timeout): with a single worker, another
// parent still converges, and the looping parent says which line of which
// file did not finish. On the old code the render had no deadline: the
// only worker rendered the looping parent until Loom was killed, and the
// other parent never became Ready.
func TestLoopingTemplateDoesNotBlockOtherParents(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "app"), map[string]string{
		"loom.yaml": "parent:\n  apiVersion: example.loom.dev/v1alpha1\n  kind: MyResource\n",
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\ndata:\n  image: {{ .Spec.image | quote }}\n" +
			"{{- if eq .Spec.image \"loop\" }}{{ range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}{{ end }}\n",
	})
	startLoom(t, dir, ns, loomOptions{workers: 1, reconcileTimeout: 4 * time.Second})
	createParent(t, ns, "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: looping\nspec:\n  image: loop\n")
	createParent(t, ns, minimalParent)
	waitCondition(t, ns, "hello", "Ready", "True")
	waitDegraded(t, myresGVR, ns, "looping", "RenderFailed",
		"configmap.yaml:7: the render did not finish in time (a loop that never ends?): it ran for 2s, half the reconcile timeout (loom run --reconcile-timeout)")
}
