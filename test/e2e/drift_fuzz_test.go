//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/loom-operator/loom/test/env"
)

// leaf is one field Loom owns in a child: its path in the object.
type leaf struct {
	gvr  schema.GroupVersionResource
	name string
	path fieldpath.Path
}

// loomLeaves lists the fields Loom's managedFields entry owns in obj,
// leaving out the ones an edit cannot change freely (list keys, the
// Deployment's immutable selector, Loom's hash annotation).
func loomLeaves(t *testing.T, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) []leaf {
	t.Helper()
	var out []leaf
	for _, e := range obj.GetManagedFields() {
		if e.Manager != "loom" || e.Operation != "Apply" || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			t.Fatal(err)
		}
		s.Leaves().Iterate(func(p fieldpath.Path) {
			str := p.String()
			for _, skip := range []string{".spec.selector", ".metadata.annotations.loom.dev/applied", ".metadata.ownerReferences"} {
				if strings.HasPrefix(str, skip) {
					return
				}
			}
			if isKeyField(p) {
				return
			}
			out = append(out, leaf{gvr: gvr, name: obj.GetName(), path: p})
		})
	}
	return out
}

// isKeyField reports whether the last element of p is one of the keys of
// the list item it is in (changing it would make another item).
func isKeyField(p fieldpath.Path) bool {
	if len(p) < 2 || p[len(p)-1].FieldName == nil || p[len(p)-2].Key == nil {
		return false
	}
	for _, f := range *p[len(p)-2].Key {
		if f.Name == *p[len(p)-1].FieldName {
			return true
		}
	}
	return false
}

// locate returns the map holding the field at p in obj, and the field's
// name, or ok false.
func locate(obj map[string]any, p fieldpath.Path) (parent map[string]any, field string, ok bool) {
	var cur any = obj
	for i, el := range p {
		switch {
		case el.FieldName != nil:
			m, isMap := cur.(map[string]any)
			if !isMap {
				return nil, "", false
			}
			if i == len(p)-1 {
				return m, *el.FieldName, true
			}
			cur = m[*el.FieldName]
		case el.Key != nil:
			items, isList := cur.([]any)
			if !isList {
				return nil, "", false
			}
			cur = nil
			for _, it := range items {
				if m, isMap := it.(map[string]any); isMap && keyMatches(m, *el.Key) {
					cur = m
				}
			}
		default:
			return nil, "", false
		}
	}
	return nil, "", false
}

func keyMatches(item map[string]any, key value.FieldList) bool {
	for _, f := range key {
		a, _ := json.Marshal(item[f.Name])
		b, _ := json.Marshal(f.Value.Unstructured())
		if !bytes.Equal(a, b) {
			return false
		}
	}
	return true
}

// mutate changes a scalar the way a careless hand would.
func mutate(v any) any {
	switch x := v.(type) {
	case string:
		return x + "0"
	case int64:
		return x + 1
	case bool:
		return !x
	}
	return nil
}

// Random edits by another writer, each either to a field Loom owns (which
// Loom must put back, with a bounded number of writes) or to a field it
// does not (which Loom must leave alone, with no write). The seed is
// logged; LOOM_DRIFT_SEED replays a run.
func TestRandomEditsToLiveChildren(t *testing.T) {
	t.Parallel()
	randomEdits(t, false)
}

// The same edits, each made while Loom is down: Loom is stopped before
// each edit and a new one (with no record of the last one's applies) is
// started after it. The new Loom must repair exactly the field edited,
// with one write to that child, and write nothing for an edit of a field
// that is not Loom's. On the old code the new Loom applied every child
// once after each restart.
func TestRandomEditsToChildrenWhileLoomIsDown(t *testing.T) {
	t.Parallel()
	randomEdits(t, true)
}

// randomEdits makes the random edits, while Loom runs or, with restart,
// each while no Loom runs.
func randomEdits(t *testing.T, restart bool) {
	e := env.From(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LOOM_DRIFT_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (LOOM_DRIFT_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	ns := e.NewNamespace(t)
	l := startDriftParent(t, ns, "f")
	ctx := context.Background()
	children := map[schema.GroupVersionResource]string{secretGVR: "f-secret", configMapGVR: "f-cm", deployGVR: "f"}
	snapshot := map[string]*unstructured.Unstructured{}
	var leaves []leaf
	for gvr, name := range children {
		u, err := e.Get(ctx, gvr, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		snapshot[gvr.Resource] = u
		leaves = append(leaves, loomLeaves(t, gvr, u)...)
	}
	if len(leaves) < 10 {
		t.Fatalf("only %d fields owned by Loom found; the managedFields reading is broken", len(leaves))
	}
	const rounds = 12
	// down stops Loom before an edit, with restart; up starts a new one
	// after it and waits until it has decided every child and gone quiet.
	down := func() {
		if restart {
			l.stop(t)
		}
	}
	up := func() {
		if !restart {
			return
		}
		l = startLoom(t, l.templates, ns, loomOptions{})
		eventually(t, 30*time.Second, "the new Loom decides every child", func(context.Context) error {
			if n := l.counter(t, "loom_child_changes_total", nil); n < float64(len(children)) {
				return fmt.Errorf("%.0f of %d children decided", n, len(children))
			}
			return nil
		})
		quiesce(t, time.Second, func() float64 { return float64(l.writes.total.Load()) })
	}
	for i := range rounds {
		quiesce(t, time.Second, func() float64 { return float64(l.writes.total.Load()) })
		l.writes.reset()
		down()
		if rng.IntN(3) == 0 {
			// A field Loom does not set: a label of another tool.
			gvrs := []schema.GroupVersionResource{secretGVR, configMapGVR, deployGVR}
			gvr := gvrs[rng.IntN(len(gvrs))]
			key := fmt.Sprintf("other-%d", i)
			if err := update(ctx, e, gvr, ns, children[gvr], func(u *unstructured.Unstructured) {
				labels := u.GetLabels()
				labels[key] = "x"
				u.SetLabels(labels)
			}); err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			up()
			time.Sleep(2 * time.Second)
			// Only the children count: a Deployment the previous round
			// repaired may still be rolling out, and its parent's status
			// and Events follow it.
			_, log := l.writes.snapshot()
			n := 0
			for cgvr, name := range children {
				n += writesTo(log, cgvr.Resource+"/"+name, false)
			}
			if n != 0 {
				t.Errorf("round %d: label %s on %s (not Loom's): %d writes to children, want 0: %v", i, key, gvr.Resource, n, log)
			}
			continue
		}
		lf := leaves[rng.IntN(len(leaves))]
		remove := rng.IntN(2) == 0
		want, _, _ := locate(snapshot[lf.gvr.Resource].Object, lf.path)
		if want == nil {
			t.Fatalf("round %d: %s not found in the snapshot", i, lf.path)
		}
		_, field, _ := locate(snapshot[lf.gvr.Resource].Object, lf.path)
		wantValue := want[field]
		before, err := e.Get(ctx, lf.gvr, ns, lf.name)
		if err != nil {
			t.Fatal(err)
		}
		err = update(ctx, e, lf.gvr, ns, lf.name, func(u *unstructured.Unstructured) {
			m, f, ok := locate(u.Object, lf.path)
			if !ok {
				return
			}
			if nv := mutate(m[f]); nv != nil && !remove {
				m[f] = nv
			} else {
				delete(m, f)
			}
		})
		if err != nil {
			up()
			t.Logf("round %d: the API server refused the edit of %s %s (%v); skipped", i, lf.gvr.Resource, lf.path, err)
			continue
		}
		if after, err := e.Get(ctx, lf.gvr, ns, lf.name); err == nil && after.GetResourceVersion() == before.GetResourceVersion() {
			// Removing a field whose value is the server's default (a
			// Deployment's replicas: 1) is no change: nothing to repair.
			up()
			t.Logf("round %d: the edit of %s %s changed nothing (the server defaulted it back); skipped", i, lf.gvr.Resource, lf.path)
			continue
		}
		up()
		t.Logf("round %d: %s %s %s", i, map[bool]string{true: "removed", false: "changed"}[remove], lf.gvr.Resource, lf.path)
		eventually(t, 20*time.Second, fmt.Sprintf("round %d: Loom restores %s %s", i, lf.gvr.Resource, lf.path), func(ctx context.Context) error {
			u, err := e.Get(ctx, lf.gvr, ns, lf.name)
			if err != nil {
				return err
			}
			m, f, ok := locate(u.Object, lf.path)
			if !ok || !reflect.DeepEqual(m[f], wantValue) {
				return fmt.Errorf("%v, want %v", m[f], wantValue)
			}
			return nil
		})
		quiesce(t, time.Second, func() float64 { return float64(l.writes.total.Load()) })
		_, log := l.writes.snapshot()
		// A child that lost a label Loom selects on left Loom's cache, so
		// Loom creates it again: the API server refuses that create (409)
		// and Loom applies over its own child. The refused request wrote
		// nothing.
		target := lf.gvr.Resource + "/" + lf.name
		if n, all := writesTo(log, target, true), writesTo(log, target, false); n != 1 || all > 2 {
			t.Errorf("round %d: %d writes to %s to repair one field (%d requests), want 1 (at most 2 requests): %v", i, n, lf.gvr.Resource, all, log)
		}
		others := 0
		for cgvr, name := range children {
			if cgvr != lf.gvr {
				others += writesTo(log, cgvr.Resource+"/"+name, false)
			}
		}
		if others != 0 {
			t.Errorf("round %d: %d writes to the other children when only %s was edited, want 0: %v", i, others, lf.gvr.Resource, log)
		}
	}
}

// writesTo counts the logged write requests to a path that ends in
// suffix; only those the API server accepted (2xx) when accepted is set.
func writesTo(log []string, suffix string, accepted bool) int {
	n := 0
	for _, l := range log {
		_, rest, _ := strings.Cut(l, " ") // the method
		path, code, _ := strings.Cut(rest, " ")
		if accepted && !strings.HasPrefix(code, "2") {
			continue
		}
		if strings.HasSuffix(path, "/"+suffix) {
			n++
		}
	}
	return n
}
