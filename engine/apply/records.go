package apply

import (
	"crypto/sha256"
	"strings"
	"unique"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// What Loom remembers of its applies, and the decision it rests on.

// record is what Loom last applied to one object, taken from the server's
// response: the hash of the desired object, the object's UID and
// resourceVersion, and the fingerprint of the fields Loom owns in it. One
// is kept per child for as long as Loom runs, so it is small and holds no
// pointer: strings are kept as digests, compared for equality only.
//
// resourceVersions are opaque (after an etcd restore they even go
// backwards), so a record never asks whether one is older than another.
// It tells whether the cache is behind Loom's write from what the cache
// delivers instead: the cache is behind from the write until its watch
// delivers a version of the object other than pre, the one it held when
// Loom wrote (see Observe). A watch delivers an object's versions in the
// order they were written, so the first one after pre is Loom's write or
// a later one, or, if another writer came in between, one that leads to
// it; in every case the cache no longer holds the object Loom read. The
// watch may deliver the write before its response reaches Loom: seen, the
// last version delivered, kept across records (and in a record with no
// apply, for a child Loom has not applied yet), tells it then.
type record struct {
	hash   digest
	uid    digest
	fields digest
	rv     version
	// pre is the resourceVersion the cache held when Loom wrote, zero
	// when it held no object.
	pre version
	// seen is the last version the watch delivered, zero if none.
	seen version
	// behind is set from the write until the cache delivers a version
	// other than pre.
	behind bool
	// stale is set when a reconcile went on with a cached object older
	// than this write: the watch echo of the write must then reach the
	// controller, which has not seen the object as it is.
	stale bool
}

// newRecord returns the record of an apply that gave the object
// resourceVersion rv, over the version pre the cache held ("" when none).
// An apply that changed nothing leaves the version, and the cache, as they
// were.
func newRecord(hash string, uid types.UID, rv, pre, fields string) record {
	return record{hash: digestOf(hash), uid: digestOf(string(uid)), fields: digestOf(fields),
		rv: versionOf(rv), pre: versionOf(pre), behind: rv != pre}
}

// digest stands for a string a record compares with: the first 128 bits of
// its SHA-256, so two different strings never have the same digest in
// practice.
type digest [16]byte

func digestOf(s string) digest {
	var d digest
	if s == "" {
		return d
	}
	sum := sha256.Sum256([]byte(s))
	copy(d[:], sum[:])
	return d
}

// version stands for a resourceVersion a record compares with: a 64-bit
// FNV-1a hash of it, 0 for none. Only versions of one object are ever
// compared, so two different ones having the same hash is not a concern
// in practice, and each takes 8 bytes, as the number it replaced did.
type version uint64

func versionOf(rv string) version {
	if rv == "" {
		return 0
	}
	h := uint64(14695981039346656037) // FNV-1a, as hash/fnv, without its allocation
	for i := 0; i < len(rv); i++ {
		h ^= uint64(rv[i])
		h *= 1099511628211
	}
	return version(h)
}

// recordKey is a Ref as a record's key: its group, kind and namespace,
// which few objects do not share, kept once (a unique.Handle), and its
// name.
type recordKey struct {
	scope unique.Handle[scope]
	name  string
}

type scope struct {
	gk        schema.GroupKind
	namespace string
}

// keyOf returns the key of ref's record. The name is ref's own string: the
// key of a record to store must be made by ownKey.
func keyOf(ref object.Ref) recordKey {
	return recordKey{scope: unique.Make(scope{gk: ref.GroupKind, namespace: ref.Namespace}), name: ref.Name}
}

// ownKey returns the key of ref's record with a name string of its own. A
// rendered object's strings share the memory of the whole document they
// were decoded from, and a record lives as long as its child: its key must
// not keep that document alive.
func ownKey(ref object.Ref) recordKey {
	k := keyOf(ref)
	k.name = strings.Clone(k.name)
	return k
}

// check reports whether the child needs no write, and whether Loom has a
// record of applying this very desired object (so the object is Loom's
// and exists unless someone deleted it, which the caller's watch reports).
// The child needs no write when:
//   - the cache has not yet caught up with Loom's own apply of this very
//     desired object (it still holds what it held when Loom wrote, and
//     has delivered nothing else since; see record); or
//   - live is the object Loom applied it to (same UID), it still carries
//     the hash of this desired object, and Loom owns exactly the fields
//     its apply left it owning (same fingerprint of its managedFields
//     entry). Any change or removal of one of those fields by another
//     writer changes that entry, so this decision is exact: it does not
//     compare values, and no server normalisation can fool it.
//
// With no record of this desired object (after a restart, or a takeover
// of the parent), Apply asks proven (expect.go), which decides from the
// live entry and the server's schema; what it cannot prove is applied.
func (a *Applier) check(ref object.Ref, hash string, live *unstructured.Unstructured) (unchanged, known bool) {
	unchanged, known, _ = a.decide(ref, hash, live)
	return unchanged, known
}

// decide is check, which also reports, from the same look at the records,
// whether Loom has a record of applying this very desired object (hash)
// to ref. A record of another one (this process applied the child from an
// earlier template, and another process applied it since) says nothing of
// the child as it is.
func (a *Applier) decide(ref object.Ref, hash string, live *unstructured.Unstructured) (unchanged, known, recorded bool) {
	key := keyOf(ref)
	a.mu.Lock()
	defer a.mu.Unlock()
	rec, ok := a.applied[key]
	if !ok || rec.hash != digestOf(hash) {
		return false, ok && rec.hash != digest{}, false // a record with no hash holds only what the watch delivered
	}
	if rec.behind && versionOf(resourceVersionOf(live)) == rec.pre {
		rec.stale = true
		// A map assignment stores the key it is given, even over an
		// equal one: the record keeps a name of its own.
		a.applied[ownKey(ref)] = rec
		return true, true, true
	}
	return live != nil && digestOf(string(live.GetUID())) == rec.uid && live.GetDeletionTimestamp() == nil &&
		live.GetAnnotations()[AnnotationApplied] == hash && digestOf(pack.Fingerprint(live, a.manager)) == rec.fields, true, true
}

// resourceVersionOf returns obj's resourceVersion, "" for no object.
func resourceVersionOf(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	return obj.GetResourceVersion()
}

// remember stores r, the record of an apply of ref. If the watch already
// delivered the version the apply produced, the cache is not behind it.
func (a *Applier) remember(ref object.Ref, r record) {
	key := ownKey(ref)
	a.mu.Lock()
	if old, ok := a.applied[key]; ok && old.seen != 0 {
		r.seen = old.seen
		r.behind = r.behind && old.seen != r.rv
	}
	a.applied[key] = r
	a.mu.Unlock()
}

// Observe tells the Applier that the cache delivered resourceVersion rv
// of the object (an add or an update), which ends the time the cache is
// behind Loom's last write (see record) unless rv is the version the cache
// held before it. It reports whether rv is the one Loom's own last apply
// produced: the watch echo of that write, which the reconcile that made it
// has already taken into account (unless a reconcile went on with the
// older object since). ref's name must be a string of its own, as a
// cached object's is (pack copies each name out of the JSON): the record
// keeps it, so Observe, called on every watch event of a child, does not
// copy it.
func (a *Applier) Observe(ref object.Ref, rv string) (ownWrite bool) {
	key := keyOf(ref)
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := a.applied[key] // with no apply yet, a record of what the watch delivered
	d := versionOf(rv)
	rec.seen = d
	if rec.behind && d != rec.pre {
		rec.behind = false
	}
	a.applied[key] = rec
	return !rec.stale && rv != "" && rec.rv == d
}

// Len returns how many objects the Applier keeps a record of.
func (a *Applier) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.applied)
}

// Forget drops what Loom remembers of an object that is gone.
func (a *Applier) Forget(ref object.Ref) {
	key := keyOf(ref)
	a.mu.Lock()
	delete(a.applied, key)
	delete(a.warned, key)
	a.mu.Unlock()
}
