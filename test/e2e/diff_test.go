//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/test/env"
)

// loomDiff runs bin/loom diff and returns its output and exit code.
func loomDiff(t *testing.T, args ...string) (string, int) {
	t.Helper()
	e := env.From(t)
	bin := e.Binary
	out, err := exec.Command(bin, append([]string{"diff", "--kubeconfig", e.Kubeconfig}, args...)...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("loom diff: %v\n%s", err, out)
	return "", 0
}

// loom diff previews a template edit against the live children: what would
// change, be created or be pruned, with kubectl diff's exit codes, and it
// writes nothing.
func TestDiffPreviewsATemplateEdit(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "web", "Ready", "True")
	waitCondition(t, ns, "hello", "Ready", "True")

	out, code := loomDiff(t, "-t", filepath.Join(e.Root, "templates", "myresource"), "-n", ns)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("MyResource %s/web: 0 to create, 0 to change, 3 unchanged, 0 to prune", ns)) {
		t.Fatalf("the shipped set against its own children: exit %d\n%s", code, out)
	}

	dir := filepath.Join(copyTemplates(t), "myresource")
	editFile(t, filepath.Join(dir, "deployment.yaml"), "spec:\n  replicas:", "spec:\n  minReadySeconds: 5\n  replicas:")
	if err := os.Remove(filepath.Join(dir, "service.yaml")); err != nil {
		t.Fatal(err)
	}
	out, code = loomDiff(t, "-t", dir, "-n", ns, "web")
	for _, want := range []string{
		fmt.Sprintf("+++ rendered/Deployment.apps/%s/web", ns),
		"+  minReadySeconds: 5",
		fmt.Sprintf("--- live/Service/%s/web", ns),
		fmt.Sprintf("MyResource %s/web: 0 to create, 1 to change, 1 unchanged, 1 to prune", ns),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff output lacks %q", want)
		}
	}
	if code != 1 || strings.Contains(out, "hello") {
		t.Errorf("exit %d (want 1), and only the named parent", code)
	}
	if t.Failed() {
		t.Fatalf("output:\n%s", out)
	}

	// Nothing was written.
	dep, err := e.Get(context.Background(), deployGVR, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedInt64(dep.Object, "spec", "minReadySeconds"); found {
		t.Error("the dry run changed the Deployment")
	}
	if _, err := e.Get(context.Background(), serviceGVR, ns, "web"); err != nil {
		t.Errorf("the dry run pruned the Service: %v", err)
	}

	// A template that does not render is exit 2, with its file:line.
	editFile(t, filepath.Join(dir, "deployment.yaml"), "spec:\n  minReadySeconds: 5", "spec:\n  minReadySeconds: {{ required \"spec.nope is required\" .Spec.nope }}")
	out, code = loomDiff(t, "-t", dir, "-n", ns)
	if code != 2 || !strings.Contains(out, "deployment.yaml:") {
		t.Fatalf("broken template: exit %d (want 2)\n%s", code, out)
	}
}
