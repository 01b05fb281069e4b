package statuswriter

// Unit tests of what a Writer remembers of the statuses it wrote, and when
// it drops it.

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/status"
)

func u(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(j, &obj); err != nil { // numbers as int64, like the API server's
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

const parentYAML = `
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata: {name: web, namespace: ns, uid: u1, resourceVersion: "1", generation: 1, labels: {a: b}}
spec: {replicas: 1}
`

// parentCache stands for a controller's parent cache: what a test Writer's
// Config.Cached and Config.Parent read.
type parentCache map[cache.ObjectName]*unstructured.Unstructured

// add puts (or replaces) a copy of p in the cache.
func (pc parentCache) add(p *unstructured.Unstructured) { pc[cache.MetaObjectToName(p)] = p.DeepCopy() }

// newTestWriter returns a Writer that reads pc as its parent cache (nil:
// a controller not started), for tests of what it remembers; it writes
// nothing.
func newTestWriter(pc parentCache) *Writer {
	return New(Config{
		Cached: func(key cache.ObjectName) (types.UID, string, bool) {
			p, ok := pc[key]
			if !ok {
				return "", "", false
			}
			return p.GetUID(), p.GetResourceVersion(), true
		},
		Parent: func(key cache.ObjectName) (*unstructured.Unstructured, bool) {
			p, ok := pc[key]
			if !ok {
				return nil, false
			}
			return p.DeepCopy(), true
		},
	})
}

// The status Loom wrote is kept only until the cache catches up with it:
// then the cached parent holds it, and a copy per parent would only cost
// memory.
func TestWrittenStatusIsDroppedOnceTheCacheCatchesUp(t *testing.T) {
	w := newTestWriter(nil)
	w.written = map[types.UID]writtenStatus{}
	parent := u(t, parentYAML)
	parent.SetUID("u1")
	w.written["u1"] = writtenStatus{stale: []string{"9"}, status: map[string]any{"state": "Ready"}}

	parent.SetResourceVersion("9") // the cache lags behind Loom's write, based on 9
	if got := w.Previous(parent); got.Object["status"].(map[string]any)["state"] != "Ready" {
		t.Fatalf("previous with a lagging cache = %v, want the status Loom wrote", got.Object["status"])
	}
	if len(w.written) != 1 {
		t.Fatal("the written status was dropped before the cache caught up")
	}
	parent.SetResourceVersion("10")
	if got := w.Previous(parent); got != parent {
		t.Fatal("previous with a current cache should be the cached parent")
	}
	if len(w.written) != 0 {
		t.Errorf("the written status is still kept after the cache caught up: %v", w.written)
	}
}

// The status Loom wrote is dropped as soon as the parent's watch event
// shows the cache has caught up with the write (the controller calls
// CaughtUp on every update event), not only at the parent's next
// reconcile: a status write triggers no reconcile, so at steady state that
// copy would be kept for every parent.
func TestWrittenStatusIsDroppedWhenTheWatchCatchesUp(t *testing.T) {
	tests := []struct {
		name     string
		eventRV  string
		uid      types.UID
		wantKept bool
	}{
		{"the echo of the write", "10", "u1", false},
		{"a newer update", "11", "u1", false},
		{"a late delivery of the version the write was based on", "9", "u1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestWriter(parentCache{})
			w.written = map[types.UID]writtenStatus{"u1": {stale: []string{"9"}, status: map[string]any{"state": "Ready"}}}
			w.written["u9"] = writtenStatus{stale: []string{"4"}, status: map[string]any{"state": "Ready"}} // another parent's
			// The update event of a status-only change (no reconcile).
			w.CaughtUp(tt.uid, tt.eventRV)
			if _, kept := w.written["u1"]; kept != tt.wantKept {
				t.Errorf("written status kept = %v, want %v", kept, tt.wantKept)
			}
			if _, kept := w.written["u9"]; !kept {
				t.Error("another parent's written status was dropped")
			}
		})
	}
}

// The watch event of a status write can reach the cache before the write's
// response reaches Loom: then no later event drops the copy Loom keeps, so
// it must not be kept at all. Which versions came while the write was in
// flight tells a newer update from an older one.
func TestWrittenStatusIsNotKeptWhenTheCacheIsAhead(t *testing.T) {
	tests := []struct {
		name     string
		cachedRV string
		cachedID types.UID
		// delivered are the versions the cache delivered while the write
		// was in flight.
		delivered []string
		wantKept  bool
	}{
		{"cache already holds the write", "10", "u1", nil, false},
		{"cache holds a newer update, delivered after the write's", "12", "u1", []string{"10", "12"}, false},
		{"cache holds a version delivered before the write's", "8", "u1", []string{"8"}, true},
		{"cache behind the write (at the version it was based on)", "1", "u1", nil, true},
		{"cache holds another object of that name", "10", "u2", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := parentCache{}
			w := newTestWriter(pc)
			parent := u(t, parentYAML)
			cached := parent.DeepCopy()
			cached.SetResourceVersion(tt.cachedRV)
			cached.SetUID(tt.cachedID)
			pc.add(cached)
			end := w.beginWrite(parent.GetUID())
			for _, v := range tt.delivered {
				w.CaughtUp(parent.GetUID(), v)
			}
			w.rememberWritten(parent, "10", map[string]any{"state": "Ready"})
			end()
			if _, kept := w.written[parent.GetUID()]; kept != tt.wantKept {
				t.Errorf("written status kept = %v, want %v", kept, tt.wantKept)
			}
		})
	}
}

// A parent whose CRD has no status subresource is told once: a CRD change
// lets its next reconcile try the write again, and finding no subresource
// again does not tell it again. Only a successful write, or the parent
// going, clears that.
func TestNoStatusSubresourceIsToldOnce(t *testing.T) {
	tests := []struct {
		name string
		// between happens after the first finding and a CRD change.
		between   func(w *Writer, parent *unstructured.Unstructured)
		wantFirst bool
	}{
		{"found again after a CRD change", func(*Writer, *unstructured.Unstructured) {}, false},
		{"written after the CRD gained it, then lost again", func(w *Writer, parent *unstructured.Unstructured) {
			w.rememberWritten(parent, "10", map[string]any{"state": "Ready"})
		}, true},
		{"the parent was deleted and recreated", func(w *Writer, parent *unstructured.Unstructured) {
			w.Forget(parent.GetUID())
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := parentCache{}
			w := newTestWriter(pc)
			parent := u(t, parentYAML)
			pc.add(parent)
			if !w.markNoStatus(parent.GetUID()) {
				t.Fatal("the first finding does not tell")
			}
			if got, want := w.RetryNoStatus(), map[types.UID]bool{parent.GetUID(): true}; !maps.Equal(got, want) {
				t.Errorf("a CRD change retries %v, want %v", got, want)
			}
			skip := w.skipped(parent.GetUID())
			if skip {
				t.Error("after a CRD change the status write is still skipped")
			}
			tt.between(w, parent)
			if got := w.markNoStatus(parent.GetUID()); got != tt.wantFirst {
				t.Errorf("second finding tells = %v, want %v", got, tt.wantFirst)
			}
		})
	}
}

// resourceVersions are opaque, and after an etcd restore they go
// backwards: a parent that comes back at a version below the one Loom's
// status write produced is the parent as it is now, not a cache that lags
// behind the write. Loom must compare against it (and drop its copy), not
// against a status the restored world does not hold.
func TestWrittenStatusAfterResourceVersionsWentBack(t *testing.T) {
	tests := []struct {
		name string
		// deliver is how the restored parent reaches the controller.
		deliver func(w *Writer, restored *unstructured.Unstructured) *unstructured.Unstructured
	}{
		{"its watch event", func(w *Writer, restored *unstructured.Unstructured) *unstructured.Unstructured {
			w.CaughtUp(restored.GetUID(), restored.GetResourceVersion())
			return nil
		}},
		{"the next reconcile", func(w *Writer, restored *unstructured.Unstructured) *unstructured.Unstructured {
			return w.Previous(restored)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestWriter(parentCache{})
			parent := u(t, parentYAML)
			parent.SetResourceVersion("990")
			w.rememberWritten(parent, "1000", map[string]any{"state": "Ready"})
			if _, kept := w.written[parent.GetUID()]; !kept {
				t.Fatal("the written status is not kept while the cache is behind the write")
			}
			restored := parent.DeepCopy()
			restored.SetResourceVersion("500")
			restored.Object["status"] = map[string]any{"state": "Progressing"}
			if got := tt.deliver(w, restored); got != nil && got != restored {
				t.Errorf("previous = %v, want the restored parent", got.Object["status"])
			}
			if _, kept := w.written[parent.GetUID()]; kept {
				t.Error("the written status is kept after the parent came back at another version")
			}
		})
	}
}

// Two status writes in a row, both made while the cache still held the
// version before the first: the echo of the first write is older than
// the second, so it must not count as the cache catching up. Otherwise the
// next reconcile compares against the first write's status, finds Ready
// changed, and stamps a new lastTransitionTime on a condition that never
// changed (TestBadInputMatrix saw a good parent's Ready "change" a second
// after it became Ready).
func TestWrittenStatusSurvivesTheEchoOfAnEarlierWrite(t *testing.T) {
	w := newTestWriter(parentCache{})
	parent := u(t, parentYAML)
	parent.SetResourceVersion("1")
	w.rememberWritten(parent, "2", map[string]any{"state": "Building"})
	w.rememberWritten(parent, "3", map[string]any{"state": "Ready"}) // the cache still held 1

	echo := parent.DeepCopy()
	echo.SetResourceVersion("2") // the first write's echo
	echo.Object["status"] = map[string]any{"state": "Building"}
	w.CaughtUp(parent.GetUID(), "2")
	if got := w.Previous(echo).Object["status"].(map[string]any)["state"]; got != "Ready" {
		t.Fatalf("previous with the cache at the first write = %v, want the second write's status", got)
	}
	latest := parent.DeepCopy()
	latest.SetResourceVersion("3")
	if got := w.Previous(latest); got != latest {
		t.Fatal("previous with the cache at the second write should be the cached parent")
	}
	if _, kept := w.written[parent.GetUID()]; kept {
		t.Error("the written status is kept after the cache caught up with the last write")
	}
}

// A reconcile that read the parent at version 1 writes its status (3)
// after the cache moved on to 2, the echo of an earlier status write of
// Loom's whose copy the cache already replaced. Version 2 is older than 3,
// so a cache still at 2 is behind this write: the next reconcile must
// compare against what Loom wrote at 3, or it stamps a new
// lastTransitionTime on a Ready that did not change (TestBadInputMatrix,
// with other tests creating CRDs in parallel, saw it every run).
func TestWrittenStatusFromAnOlderReadThanTheCache(t *testing.T) {
	pc := parentCache{}
	w := newTestWriter(pc)
	parent := u(t, parentYAML)
	parent.SetResourceVersion("1")
	cached := parent.DeepCopy()
	cached.SetResourceVersion("2")
	cached.Object["status"] = map[string]any{"state": "Building"}
	pc.add(cached)
	w.rememberWritten(parent, "3", map[string]any{"state": "Ready"})
	if got := w.Previous(cached).Object["status"].(map[string]any)["state"]; got != "Ready" {
		t.Fatalf("previous with the cache at 2 = %v, want the status Loom wrote at 3", got)
	}
	latest := parent.DeepCopy()
	latest.SetResourceVersion("3")
	pc.add(latest)
	if got := w.Previous(latest); got != latest {
		t.Fatal("previous with the cache at 3 should be the cached parent")
	}
}

// A reconcile reads its parent when it starts; by the time it computes the
// status, the cache may hold a newer version, with the status Loom wrote
// meanwhile (whose copy the cache's catching up dropped). The status to
// compare against is the newest: the cache's, not the reconcile's read,
// or a Ready that never changed gets a new lastTransitionTime
// (TestBadInputMatrix under load).
func TestPreviousStatusIsTheCachesWhenTheReadIsOlder(t *testing.T) {
	pc := parentCache{}
	w := newTestWriter(pc)
	read := u(t, parentYAML)
	read.SetResourceVersion("1")
	read.SetGeneration(3)
	read.Object["status"] = map[string]any{"state": "Building"}
	cached := read.DeepCopy()
	cached.SetResourceVersion("2")
	cached.SetGeneration(4) // the spec changed too: the reconcile renders generation 3
	cached.Object["status"] = map[string]any{"state": "Ready"}
	pc.add(cached)
	got := w.Previous(read)
	if state := got.Object["status"].(map[string]any)["state"]; state != "Ready" {
		t.Errorf("previous status = %v, want the cache's newer one", state)
	}
	if got.GetGeneration() != 3 {
		t.Errorf("previous generation = %d, want the reconcile's read (3): its status describes that spec", got.GetGeneration())
	}
}

// A chart's rendered notes join the status template's fields as
// status.notes; no notes, no field.
func TestWithNotes(t *testing.T) {
	tests := []struct {
		name  string
		extra map[string]any
		notes string
		want  map[string]any
	}{
		{"notes", nil, "Installed a.\n", map[string]any{"notes": "Installed a.\n"}},
		{"notes beside the status template's fields", map[string]any{"url": "x"}, "n", map[string]any{"url": "x", "notes": "n"}},
		{"no notes", map[string]any{"url": "x"}, "", map[string]any{"url": "x"}},
		{"no notes, no fields", nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WithNotes(status.Input{Extra: tt.extra}, tt.notes)
			if diff := cmp.Diff(tt.want, got.Extra); diff != "" {
				t.Errorf("status fields (-want +got):\n%s", diff)
			}
		})
	}
}
