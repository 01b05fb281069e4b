//go:build e2e

package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// stormLabel is the parent label the storm writes; the test's set copies
// it into an annotation of each parent's Service.
const stormLabel = "storm"

// A 409 storm: while Loom converges 300 parents, another client patches
// every parent's labels, round after round, each patch conditional on the
// resourceVersion it last read, so that Loom's status writes make it fail
// with 409 Conflict. Every parent converges, its status ends up current,
// and the last label value of each parent reaches its Service (a set
// whose Service carries the label): no change is lost.
func TestConflictStorm(t *testing.T) {
	e := env.From(t)
	const parents = 300
	dir := t.TempDir()
	if err := testutil.CopyDir(filepath.Join(e.Root, "templates"), dir); err != nil {
		t.Fatal(err)
	}
	testutil.EditFile(t, filepath.Join(dir, "myresource", "service.yaml"), "spec:",
		"  annotations:\n    loom.test/storm: {{ .Labels."+stormLabel+" | default \"none\" | quote }}\nspec:")
	r := newRun(t, dir)
	r.create(parents, nil)
	s := startStorm(t, r.ns)
	took := waitReady(t, r.ns, parents, nil, r.start, convergeTimeout)
	t.Logf("all %d parents Ready under the storm %s after the first create", parents, took.Round(100*time.Millisecond))
	testutil.Poll(t, time.Second, 2*time.Minute, "three storm rounds", func(context.Context) error {
		if n := s.rounds.Load(); n < 3 {
			return fmt.Errorf("%d rounds", n)
		}
		return nil
	})
	rounds := s.halt(t)
	conflicts := s.conflicts.Load()
	t.Logf("the storm ran %d rounds over %d parents and met %d conflicts", rounds, parents, conflicts)
	if conflicts == 0 {
		t.Fatal("the storm met no 409 Conflict: it did not race Loom's writes, so this test did not test that")
	}
	// Each round may change each parent's Service once.
	r.finish(expect{timeout: convergeTimeout, perParent: 6 + float64(rounds), kinds: fullChildren})
	w := r.meter.snapshot(t).sub(r.before)
	t.Logf("409s answered to Loom's applies: %.0f", w.sum(func(k writeKey) bool { return k.verb == "APPLY" && k.code == "409" }))

	want := strconv.Itoa(int(rounds - 1))
	services, err := e.Dyn.Resource(serviceGVR).Namespace(r.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=loom"})
	if err != nil {
		t.Fatal(err)
	}
	stale := 0
	for _, svc := range services.Items {
		if got := svc.GetAnnotations()["loom.test/storm"]; got != want {
			if stale++; stale <= 10 {
				t.Errorf("Service %s has the storm label of round %q, want the last round, %q", svc.GetName(), got, want)
			}
		}
	}
	if stale > 0 {
		t.Fatalf("%d of %d Services miss their parent's last label change", stale, len(services.Items))
	}
}

// storm patches label stormLabel of every parent in a namespace to the
// round's number, round after round, from 4 clients. Each patch carries
// the resourceVersion of the round's list; on 409 Conflict it reads the
// parent again and retries.
type storm struct {
	e         *env.Env
	rounds    atomic.Int64
	conflicts atomic.Int64
	last      atomic.Bool // stop after the round in progress
	done      chan error
}

func startStorm(t *testing.T, ns string) *storm {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &storm{e: env.From(t), done: make(chan error, 1)}
	go func() {
		for round := 0; !s.last.Load(); round++ {
			if err := s.round(ctx, ns, strconv.Itoa(round)); err != nil {
				s.done <- err
				return
			}
			s.rounds.Add(1)
		}
		s.done <- nil
	}()
	t.Cleanup(cancel)
	return s
}

// round patches every parent once. It returns an error only when ctx ends
// (nil then) or a patch fails for another reason than a conflict.
func (s *storm) round(ctx context.Context, ns, value string) error {
	list, err := s.e.Dyn.Resource(myresGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list parents: %w", err)
	}
	err = testutil.ForEach(ctx, len(list.Items), 4, func(ctx context.Context, i int) error {
		return s.patch(ctx, ns, list.Items[i].GetName(), list.Items[i].GetResourceVersion(), value)
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *storm) patch(ctx context.Context, ns, name, rv, value string) error {
	for {
		patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"labels":{%q:%q}}}`, rv, stormLabel, value)
		_, err := s.e.Dyn.Resource(myresGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		switch {
		case err == nil || ctx.Err() != nil:
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("patch the labels of %s: %w", name, err)
		}
		s.conflicts.Add(1)
		p, err := s.e.Dyn.Resource(myresGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read %s after a conflict: %w", name, err)
		}
		rv = p.GetResourceVersion()
	}
}

// halt stops the storm once the round in progress is complete, so that
// every parent carries the label of the same, last round; it fails the test
// if a round failed, and returns how many rounds completed.
func (s *storm) halt(t *testing.T) int64 {
	t.Helper()
	s.last.Store(true)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("the storm failed: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the storm's round %d did not end within 2 minutes", s.rounds.Load())
	}
	return s.rounds.Load()
}
