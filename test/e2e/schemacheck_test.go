//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/test/env"
)

// A template edit that reads a path the set's schema cannot hold does not
// load: Loom keeps the last good version (a spec change still lands, a new
// parent still gets its children) and reports the path with its file:line
// in a Warning Event on the CRD and in its log.
func TestSchemaCheckedEditKeepsLastGoodVersion(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := copyTemplates(t)
	set := filepath.Join(dir, "myresource")
	requireSpecSchema(t, filepath.Join(set, config.File))
	l := startLoom(t, dir, ns, loomOptions{bufferLogs: true})
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")

	deployment := filepath.Join(set, "deployment.yaml")
	editFile(t, deployment, "{{ .Spec.replicas }}", "{{ .Spec.replcas }}")
	at := fmt.Sprintf("deployment.yaml:%d: .Spec.replcas is not in the schema of MyResource (did you mean replicas?)",
		lineOf(t, deployment, ".Spec.replcas"))
	// The CRD is cluster-scoped: its Events live in the default namespace.
	waitEvent(t, "default", "myresources.example.loom.dev", "Warning", "TemplateSetInvalid", dir, at)
	eventually(t, 30*time.Second, "the log names the path", func(context.Context) error {
		if !strings.Contains(l.logs(), at) {
			return errNotYet
		}
		return nil
	})

	// The last good version still renders.
	patchSpec(t, ns, "web", `{"spec":{"replicas":3}}`)
	waitReplicas(t, ns, "web", 3)
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	waitReplicas(t, ns, "hello", 1)
	l.mustBeRunning(t)
}

// requireSpecSchema fails the test unless the loom.yaml at path has a
// schema that engine/crd compiles (the shipped set's has).
func requireSpecSchema(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if spec, err := crd.SpecSchema(c); err != nil || spec == nil {
		t.Fatalf("crd.SpecSchema() = %v, %v; want the shipped set's schema", spec, err)
	}
}
