package statuswriter

// Status writes, and the copy of the status Loom last wrote that a
// reconcile compares against while the parent cache lags behind it.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// Config is what a Writer is built from: what its parent controller
// holds of the Manager's, and how to read the controller's parent cache.
type Config struct {
	// Client writes the parents' status, and reads a parent whose status
	// write found nothing.
	Client dynamic.Interface
	// GVK is the parent kind.
	GVK schema.GroupVersionKind
	// Resource returns the parent kind's resource; it is known once the
	// controller started, before any status write.
	Resource func() schema.GroupVersionResource
	// FieldManager is the server-side apply field manager.
	FieldManager string
	// Clock stamps condition transitions.
	Clock clock.PassiveClock
	// Recorder records Events on parents.
	Recorder record.EventRecorder
	// Writes counts the status writes, by parent kind.
	Writes *prometheus.CounterVec
	// DriftRepairs counts the children changed back after another writer
	// changed them (RecordDrift), by parent kind; nil counts nothing.
	DriftRepairs *prometheus.CounterVec
	// DriftWarnings counts the changes of the Drifted condition to True or
	// to other children or fields (recordDrifted), by parent kind; nil
	// counts nothing.
	DriftWarnings *prometheus.CounterVec
	// Cached returns the UID and resourceVersion of the parent named key
	// in the parent cache, without decoding it; ok is false when the cache
	// holds none, or the controller has not started.
	Cached func(key cache.ObjectName) (uid types.UID, rv string, ok bool)
	// Parent returns the parent named key in the parent cache, as a copy
	// the caller owns.
	Parent func(key cache.ObjectName) (*unstructured.Unstructured, bool)
}

// Writer writes the status of the parents of one kind, for their parent
// controller, and remembers what it wrote while the parent cache lags
// behind: its statusMemory, whose CaughtUp, Forget and RetryNoStatus the
// controller calls. It is safe for concurrent use by the controller's
// workers and its informer's event handlers.
type Writer struct {
	cfg Config
	statusMemory
}

// New returns the status writer of the parent controller cfg describes.
func New(cfg Config) *Writer { return &Writer{cfg: cfg} }

// writtenStatus is the status Loom last wrote to a parent, kept while the
// cache is behind that write: the reconcile compares against it instead
// of the stale cache.
//
// resourceVersions are opaque (after an etcd restore they even go
// backwards), so whether the cache is behind is never read from their
// order: the cache is behind while it holds a version known to be older
// than the write (stale): the one the write was based on, the parent as
// the reconcile that wrote read it, and, when Loom wrote again before the
// cache caught up, the earlier writes' versions and what they were based
// on. A cache moves forward through a parent's versions, so any other
// version it holds or delivers is the write's or a later one, or the world
// as an etcd restore left it; in every case it is the parent as it is. One
// case costs more than it needs to: another writer's change to the parent
// that lands between Loom's read and its status write, seen by a reconcile
// before the write's echo, drops the copy early, and that reconcile
// applies the status again (a no-op on the server).
type writtenStatus struct {
	stale  []string
	wrote  string
	status map[string]any
}

// statusMemory is what a parent controller remembers of the statuses it
// wrote, under a lock of its own: the status last written to each parent
// while the cache is behind that write (written), the versions the cache
// delivered while a write was in flight (inflight), and the parents whose
// CRD has no status subresource (noStatus). Its zero value is ready.
type statusMemory struct {
	mu      sync.Mutex
	written map[types.UID]writtenStatus
	// inflight holds, for each parent whose status write is in flight,
	// the versions the cache delivered meanwhile (see remember).
	inflight map[types.UID][]string
	// noStatus holds the parents told, in one Warning Event, that their
	// CRD has no status subresource: true while their status writes are
	// skipped, false once a CRD change asked for one more try. The entry
	// goes when a status write succeeds or the parent goes, so the Warning
	// is said once however often other CRDs change.
	noStatus map[types.UID]bool
}

// maxStale bounds the versions a writtenStatus remembers: writes chained
// faster than the cache follows are rare, and forgetting the oldest only
// drops the copy early (the old behaviour, which costs a no-op write).
const maxStale = 8

// beginWrite starts recording the versions of the parent with uid that
// the cache delivers while its status write is in flight, which
// rememberWritten takes; the returned func stops it, for a write that
// failed.
func (s *statusMemory) beginWrite(uid types.UID) (end func()) {
	s.mu.Lock()
	if s.inflight == nil {
		s.inflight = map[types.UID][]string{}
	}
	s.inflight[uid] = []string{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.inflight, uid)
		s.mu.Unlock()
	}
}

// behind reports whether a cache at rv is behind the write.
func (w writtenStatus) behind(rv string) bool { return slices.Contains(w.stale, rv) }

// CaughtUp drops the status Loom wrote to the parent with uid once the
// cache holds resourceVersion rv of it, if rv is not the version the write
// was based on (see writtenStatus). The controller calls it on every update
// event of a parent. A status write triggers no reconcile (the controller
// ignores status-only updates), so this, and not the next reconcile
// (Previous), is what keeps Loom from holding a copy of every parent's
// status at steady state.
func (s *statusMemory) CaughtUp(uid types.UID, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seen, ok := s.inflight[uid]; ok {
		// A status write is in flight: remember decides, knowing
		// whether this version came before that write's or is it.
		if len(seen) < maxStale {
			s.inflight[uid] = append(seen, rv)
		}
		return
	}
	if w, ok := s.written[uid]; ok && !w.behind(rv) {
		delete(s.written, uid)
	}
}

// Hub is how a status computed against the hub (the version the
// templates and the status template read) reaches the version the Writer
// writes (Config.GVK's, the storage version): Parent is the parent as the
// templates read it, Converter the set's. The zero Hub converts nothing:
// a set with one version, or a status with no hub parent to convert
// over (Loom's own fields are the same in every version).
type Hub struct {
	Parent    *unstructured.Unstructured
	Converter pipeline.Converter
}

// Write computes the parent's status, against hub's parent, converts it
// to the version parent is in (the storage version, which the parent
// cache holds) and writes it when it differs from what the parent has
// (or what Loom last wrote, while the cache lags behind that write). It
// records Events on transitions.
func (w *Writer) Write(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, hub Hub, in status.Input) error {
	prev := w.Previous(parent)
	in.Parent = prev
	if in.Release == nil && set.Chart() != nil {
		// A chart set's release record outlives a reconcile that did not
		// get as far as its hooks (a failed render): losing it would
		// start the release over as an install, and run done hooks again.
		in.Release, _, _ = unstructured.NestedMap(prev.Object, "status", status.FieldRelease)
	}
	in.Rules = set.Config.Readiness
	in.Now = w.cfg.Clock.Now()
	want := w.toStorage(hub, in)
	if status.Equal(want, prev) {
		return nil
	}
	if w.skipped(parent.GetUID()) {
		return nil // its CRD has no status subresource; retried when CRDs change
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": parent.GetAPIVersion(),
		"kind":       parent.GetKind(),
		"metadata": map[string]any{
			"name": parent.GetName(), "namespace": parent.GetNamespace(), "uid": string(parent.GetUID()),
		},
		"status": want,
	}}
	defer w.beginWrite(parent.GetUID())()
	resp, err := w.cfg.Client.Resource(w.cfg.Resource()).Namespace(parent.GetNamespace()).ApplyStatus(ctx, parent.GetName(), obj,
		metav1.ApplyOptions{FieldManager: w.cfg.FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		w.noStatusSubresource(ctx, parent)
		return nil
	}
	if apierrors.IsConflict(err) && parent.GetDeletionTimestamp() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write status of %s %s/%s: %w", w.cfg.GVK.Kind, parent.GetNamespace(), parent.GetName(), err)
	}
	w.cfg.Writes.WithLabelValues(w.cfg.GVK.Kind).Inc()
	w.rememberWritten(parent, resp.GetResourceVersion(), want)
	w.recordTransitions(parent, prev, want)
	return nil
}

// toStorage computes the status of in against hub's parent, in the
// version the Writer writes. A status that cannot be converted is computed
// again without the status template's fields, and that failure is said in
// Degraded: Loom's own fields are the same in every version.
func (w *Writer) toStorage(hub Hub, in status.Input) map[string]any {
	want := status.Compute(in)
	if hub.Parent == nil || hub.Parent.GroupVersionKind().Version == w.cfg.GVK.Version {
		return want
	}
	obj := &unstructured.Unstructured{Object: maps.Clone(hub.Parent.Object)}
	obj.Object["status"] = want
	out, err := pipeline.ToVersion(hub.Converter, obj, w.cfg.GVK.Version)
	if err == nil {
		if st, ok := out.Object["status"].(map[string]any); ok {
			return st
		}
		err = fmt.Errorf("the converted %s has no status", w.cfg.GVK.Kind)
	}
	in.Extra, in.ExtraErr = nil, err
	return status.Compute(in)
}

// WithNotes returns in with a chart's rendered NOTES.txt (notes), which
// is written as status.notes (crd.StatusNotes) beside the status
// template's fields; empty notes add nothing.
func WithNotes(in status.Input, notes string) status.Input {
	if notes != "" {
		if in.Extra == nil {
			in.Extra = map[string]any{}
		}
		in.Extra[crd.StatusNotes] = notes
	}
	return in
}

// rememberWritten keeps the status Loom wrote to parent (see
// statusMemory.remember), knowing the version of it the cache holds now.
func (w *Writer) rememberWritten(parent *unstructured.Unstructured, rv string, st map[string]any) {
	cachedRV := ""
	if uid, cached, ok := w.cfg.Cached(cache.MetaObjectToName(parent)); ok && uid == parent.GetUID() {
		cachedRV = cached
	}
	w.remember(parent, cachedRV, rv, st)
}

// remember keeps the status Loom wrote to parent (the object the
// write was based on), which the write gave resourceVersion rv, until the
// cache catches up with it (CaughtUp, from the parent's update event);
// cachedRV is the version of parent the cache holds now ("": none).
// While the write was in flight, CaughtUp only recorded the versions the
// cache delivered (beginWrite); here, knowing rv, they are sorted: the
// cache holds this write already when it delivered rv (or holds it now),
// and otherwise every version it delivered or holds is older than the
// write, so stale. A write that changed nothing (rv is the version it was
// based on) leaves no copy: the cache holds that status already.
func (s *statusMemory) remember(parent *unstructured.Unstructured, cachedRV, rv string, st map[string]any) {
	uid := parent.GetUID()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = map[types.UID]writtenStatus{}
	}
	delivered := s.inflight[uid] // since the write began, and after cachedRV's read
	delete(s.inflight, uid)
	delete(s.noStatus, uid) // it has a status subresource now
	if rv == parent.GetResourceVersion() {
		delete(s.written, uid)
		return
	}
	stale := []string{parent.GetResourceVersion()}
	if prev, ok := s.written[uid]; ok && prev.behind(parent.GetResourceVersion()) {
		// Written again before the cache caught up with the last write:
		// that write's version is older than this one too.
		stale = append(slices.Clone(prev.stale), prev.wrote)
	}
	caught := cachedRV == rv || slices.Contains(delivered, rv)
	if !caught {
		// The cache may have moved on since this reconcile read the
		// parent, but not through this write's version: what it holds and
		// delivered came between the read and the write (an earlier
		// write's echo, say), so is older than this write.
		for _, v := range append(delivered, cachedRV) {
			if v != "" && !slices.Contains(stale, v) {
				stale = append(stale, v)
			}
		}
	}
	if len(stale) > maxStale {
		stale = stale[len(stale)-maxStale:]
	}
	if caught {
		delete(s.written, uid) // the cache holds this write, or a later version, already
	} else {
		s.written[uid] = writtenStatus{stale: stale, wrote: rv, status: st}
	}
}

// Previous returns the parent with the newest status Loom knows of: the
// cached one, or the one Loom wrote if the cache still holds the version
// that write was based on (see writtenStatus).
// Once the cache has caught up, Loom's copy of the status is dropped.
func (w *Writer) Previous(parent *unstructured.Unstructured) *unstructured.Unstructured {
	st, ok := w.ahead(parent)
	if !ok {
		return w.newerStatus(parent)
	}
	p := parent.DeepCopy()
	p.Object["status"] = st
	return p
}

// ahead returns the status Loom wrote to parent while the cache, at
// parent's resourceVersion, is behind that write; once the cache has
// caught up, the copy is dropped and ok is false.
func (s *statusMemory) ahead(parent *unstructured.Unstructured) (st map[string]any, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.written[parent.GetUID()]
	if !ok {
		return nil, false
	}
	if !w.behind(parent.GetResourceVersion()) {
		// The cache holds what Loom wrote, or newer: keep no copy of it.
		delete(s.written, parent.GetUID())
		return nil, false
	}
	return w.status, true
}

// newerStatus returns parent, as the reconcile read it, with the status
// of the cached parent when the cache moved on since that read: a status
// Loom wrote meanwhile is there (its copy dropped when the cache caught
// up), and comparing against the older one would stamp a new
// lastTransitionTime on conditions that did not change. The rest (the
// generation, which the status reports as observed) stays the read's: the
// children were rendered from it.
func (w *Writer) newerStatus(parent *unstructured.Unstructured) *unstructured.Unstructured {
	key := cache.MetaObjectToName(parent)
	uid, rv, ok := w.cfg.Cached(key) // not ok before the controller started
	if !ok || uid != parent.GetUID() || rv == parent.GetResourceVersion() {
		return parent
	}
	cur, ok := w.cfg.Parent(key)
	if !ok || cur.GetUID() != parent.GetUID() {
		return parent
	}
	p := parent.DeepCopy()
	if st, found := cur.Object["status"]; found {
		p.Object["status"] = st
	} else {
		delete(p.Object, "status")
	}
	return p
}

// markNoStatus skips the parent's status writes until CRDs change, and
// reports whether it is the first time it is found without a status
// subresource, that is, whether to tell.
func (s *statusMemory) markNoStatus(uid types.UID) (first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noStatus == nil {
		s.noStatus = map[types.UID]bool{}
	}
	_, told := s.noStatus[uid]
	s.noStatus[uid] = true
	return !told
}

// skipped reports whether the status writes of the parent with uid are
// skipped: its CRD has no status subresource (markNoStatus), and no CRD
// changed since (RetryNoStatus).
func (s *statusMemory) skipped(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.noStatus[uid]
}

// RetryNoStatus lets the next status write of every parent whose CRD had
// no status subresource try again (a CRD changed, and may have given it
// one), and returns their UIDs, for the controller to reconcile them again.
// They stay marked as told.
func (s *statusMemory) RetryNoStatus() map[types.UID]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	uids := map[types.UID]bool{}
	for uid, skip := range s.noStatus {
		if skip {
			uids[uid] = true
			s.noStatus[uid] = false
		}
	}
	return uids
}

// Forget drops what is remembered of the parent with uid: the status last
// written, and its missing status subresource. The controller calls it
// when that parent is deleted or replaced by a new one of the same name.
func (s *statusMemory) Forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.written, uid)
	delete(s.noStatus, uid)
}

// noStatusSubresource handles a status write that found nothing. Usually
// the parent was just deleted. If it still exists, its CRD has no status
// subresource: that is said once per parent, in a Warning Event and the
// log, and the children are still applied. It costs one read, on that
// failure only.
func (w *Writer) noStatusSubresource(ctx context.Context, parent *unstructured.Unstructured) {
	gvr := w.cfg.Resource()
	if _, err := w.cfg.Client.Resource(gvr).Namespace(parent.GetNamespace()).Get(ctx, parent.GetName(), metav1.GetOptions{}); err != nil {
		return
	}
	if !w.markNoStatus(parent.GetUID()) {
		return
	}
	msg := fmt.Sprintf("cannot write status: %s has no status subresource (for a CRD, add `subresources: {status: {}}` to version %s). Children are still applied.",
		gvr.GroupResource(), w.cfg.GVK.Version)
	klog.FromContext(ctx).Error(nil, "Cannot write status: no status subresource", "resource", gvr.String())
	w.cfg.Recorder.Event(parent, corev1.EventTypeWarning, "StatusNotWritten", msg)
}
