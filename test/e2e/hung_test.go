//go:build e2e

package e2e

// Requests the API server never answers, outside reconciles: a rollout's
// and a controller start's. Each has a deadline, so that Loom recovers
// once the server answers again (the reconciles' own case is
// TestHungRequestDoesNotBlockOtherParents).

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-operator/loom/test/env"
)

// holder hangs the requests pick chooses while it is on, and counts them.
type holder struct {
	on   atomic.Bool
	held atomic.Int64
	pick func(*http.Request) bool
}

func (h *holder) hang(r *http.Request) bool {
	if h.on.Load() && h.pick(r) {
		h.held.Add(1)
		return true
	}
	return false
}

// waitHeld waits until h holds a request.
func (h *holder) waitHeld(t *testing.T) {
	t.Helper()
	eventually(t, 30*time.Second, "a request is held", func(context.Context) error {
		if h.held.Load() == 0 {
			return errNotYet
		}
		return nil
	})
}

// rolloutRequest picks a request for a TemplateSet or TemplateRevision,
// but not a watch: the TemplateSet informer's watch is long by design.
func rolloutRequest(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/apis/loom.dev/") && r.URL.Query().Get("watch") != "true"
}

// configMapRolloutSet is rolloutSet with the ConfigMap child only, whose
// parents are Ready as soon as it is applied.
func configMapRolloutSet(t *testing.T, policy string) (string, string) {
	t.Helper()
	root, dir := rolloutSet(t, policy, "v1")
	if err := os.Remove(filepath.Join(dir, "deployment.yaml")); err != nil {
		t.Fatal(err)
	}
	return root, dir
}

// A rollout request the server never answers ends at its deadline: the
// decision fails and is made again, and an edit made while the server did
// not answer rolls out once it does. On the old code the held request (the
// candidate's TemplateRevision) had no deadline, and the set's rollouts
// stopped for good.
func TestHungRolloutRequestDoesNotStopRollouts(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	root, dir := configMapRolloutSet(t, "rollout:\n  steps: [100%]\n")
	h := &holder{pick: rolloutRequest}
	startLoom(t, root, ns, loomOptions{quiet: true, reconcileTimeout: 3 * time.Second, hang: h.hang})
	name := "app." + ns
	fleet(t, ns, 2)
	first := waitRollout(t, name, "a stable revision", 60*time.Second, func(s rolloutState) bool { return s.stable != "" && s.phase == "Complete" })
	waitFleet(t, ns, 2, first.stable, "v1")

	h.on.Store(true)
	setVersion(t, dir, "v2", "")
	h.waitHeld(t)
	h.on.Store(false)
	second := waitRollout(t, name, "the edit rolled out once the server answers", 60*time.Second, func(s rolloutState) bool {
		return s.stable != "" && s.stable != first.stable && s.phase == "Complete"
	})
	waitFleet(t, ns, 2, second.stable, "v2")
}

// A controller's start whose rollout requests the server never answers
// gives up at their deadline: the controller starts, its parents say that
// their rollout is unavailable, and the rollout starts once the server
// answers. On the old code the start waited for the TemplateSet list
// forever, and the parents showed nothing at all.
func TestHungRolloutRequestDoesNotBlockTheStart(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	root, _ := configMapRolloutSet(t, "rollout:\n  steps: [100%]\n")
	h := &holder{pick: rolloutRequest}
	h.on.Store(true)
	startLoom(t, root, ns, loomOptions{quiet: true, reconcileTimeout: 3 * time.Second, hang: h.hang})
	fleet(t, ns, 2)
	h.waitHeld(t)
	for _, p := range []string{"p-0", "p-1"} {
		waitDegraded(t, myresGVR, ns, p, "RolloutUnavailable", "deadline")
	}

	h.on.Store(false)
	first := waitRollout(t, "app."+ns, "a stable revision once the server answers", 90*time.Second, func(s rolloutState) bool {
		return s.stable != "" && s.phase == "Complete"
	})
	waitFleet(t, ns, 2, first.stable, "v1")
}

// A controller's start whose parent list or watch the server never answers
// gives up on that request and tries again: once the server answers, the
// parent cache syncs and parents are reconciled. On the old code the held
// request had no deadline, the cache never synced, and the controller
// never started.
func TestHungParentListDoesNotBlockTheStart(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "app"), map[string]string{
		"loom.yaml":      env.Fixture(t, "sets/myresource/loom.yaml"),
		"configmap.yaml": env.Fixture(t, "sets/myresource/configmap.yaml"),
	})
	parents := "/namespaces/" + ns + "/myresources"
	h := &holder{pick: func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, parents)
	}}
	h.on.Store(true)
	startLoom(t, dir, ns, loomOptions{reconcileTimeout: 3 * time.Second, hang: h.hang})
	createParentFixture(t, ns, "minimal")
	h.waitHeld(t)
	h.on.Store(false)
	waitCondition(t, ns, "hello", "Ready", "True")
}
