package seed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/chart"
	"github.com/loom-operator/loom/engine/render"
)

// AnnotationSeedOf names, on a seed Secret, the parent whose seed it is.
const AnnotationSeedOf = "loom.dev/seed-of"

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Store keeps the seed of each parent whose chart calls a random or
// generating function (chart.SeededFuncs, chart.GeneratedFuncs) in a
// Secret of the parent's namespace, with the values the generating
// functions made (keys, certificates, salted hashes, under data keys that
// start with chart.GeneratedKeyPrefix), owned by the parent (not as its
// controller: it is no child, never applied nor pruned; the garbage
// collector deletes it with the parent). Who may read the namespace's Secrets may read the seed, and
// so may read what the chart derives from it, as they could read the
// Secret the chart writes; nobody else can derive the values from what
// they can read. Every Loom process, after a restart or a change of
// leader, reads the same seed.
type Store struct {
	client dynamic.Interface
	mu     sync.Mutex
	known  map[types.UID]knownSeed
}

// knownSeed is a parent's seed, and the UID of the Secret that holds it.
type knownSeed struct {
	render.Seed
	secret types.UID
}

// NewStore returns a Store that reads and writes seed Secrets with client.
func NewStore(client dynamic.Interface) *Store {
	return &Store{client: client, known: map[types.UID]knownSeed{}}
}

// seedSecretName is the name of a parent's seed Secret:
// loom-seed-<kind>.<group>-<name>, so that two sets of the same Kind in
// two groups never share one. A name too long for the API server is
// hashed.
func seedSecretName(parent *unstructured.Unstructured) string {
	gk := parent.GroupVersionKind().GroupKind()
	name := "loom-seed-" + strings.ToLower(gk.Kind+"."+gk.Group) + "-" + parent.GetName()
	if len(name) > 253 {
		sum := sha256.Sum256([]byte(gk.String() + "/" + parent.GetName()))
		name = "loom-seed-" + hex.EncodeToString(sum[:16])
	}
	return name
}

// legacySeedSecretName is the name Loom gave seed Secrets before the
// group was in it (loom-seed-<kind>-<name>). seed migrates such a Secret,
// when it is this parent's, to seedSecretName.
func legacySeedSecretName(parent *unstructured.Unstructured) string {
	name := "loom-seed-" + strings.ToLower(parent.GetKind()) + "-" + parent.GetName()
	if len(name) > 253 {
		sum := sha256.Sum256([]byte(parent.GetKind() + "/" + parent.GetName()))
		name = "loom-seed-" + hex.EncodeToString(sum[:16])
	}
	return name
}

// Seed returns parent's seed: the one Loom knows, the one its Secret
// holds, or a new one in a new Secret, and whether the parent's
// AnnotationSeed must be written (judgeSeed). A Secret of that name that
// is not this parent's (another owner UID: an earlier parent of the same
// name that the garbage collector has not removed yet, or someone
// else's) is an error, retried: taking its seed would give values that
// change when it goes. A parent whose seed is still in a Secret of the
// legacy name (legacySeedSecretName) keeps it: it is copied to the new
// name, and the old Secret deleted. A parent whose seed was lost gets a
// *LostError, and no new seed.
func (s *Store) Seed(ctx context.Context, parent *unstructured.Unstructured) (render.Seed, bool, error) {
	uid := parent.GetUID()
	name := seedSecretName(parent)
	s.mu.Lock()
	k, ok := s.known[uid]
	s.mu.Unlock()
	if ok {
		_, mark, err := judgeSeed(parent, name, true, Fingerprint(k.Bytes))
		return k.Seed, mark, err
	}
	var b render.Seed
	secrets := s.client.Resource(secretsGVR).Namespace(parent.GetNamespace())
	obj, err := secrets.Get(ctx, name, metav1.GetOptions{})
	var old *unstructured.Unstructured
	if apierrors.IsNotFound(err) {
		obj = nil
		old, err = s.legacy(ctx, secrets, parent)
	}
	if err != nil {
		return render.Seed{}, false, fmt.Errorf("seed Secret %s/%s: %w", parent.GetNamespace(), name, err)
	}
	from := obj
	if from == nil {
		from = old
	}
	fp := ""
	if from != nil {
		if b, err = seedFrom(from, uid); err != nil {
			return render.Seed{}, false, fmt.Errorf("seed Secret %s/%s: %w", parent.GetNamespace(), from.GetName(), err)
		}
		fp = Fingerprint(b.Bytes)
	}
	action, mark, err := judgeSeed(parent, name, from != nil, fp)
	if err != nil {
		return render.Seed{}, false, err
	}
	if obj == nil && (old != nil || action == makeSeed) {
		var data map[string]any
		if old != nil {
			data, _, _ = unstructured.NestedMap(old.Object, "data")
		}
		obj, err = s.create(ctx, secrets, parent, name, data)
		if apierrors.IsAlreadyExists(err) { // another Loom made it first
			obj, err = secrets.Get(ctx, name, metav1.GetOptions{})
		}
		if err == nil {
			b, err = seedFrom(obj, uid)
		}
		if err != nil {
			return render.Seed{}, false, fmt.Errorf("seed Secret %s/%s: %w", parent.GetNamespace(), name, err)
		}
		mark = mark || Fingerprint(b.Bytes) != MarkOf(parent)
		if old != nil {
			// The seed is safe in the new Secret; an old one left behind
			// (no delete permission yet) goes with the parent.
			if derr := s.dropLegacy(ctx, secrets, parent); derr != nil {
				klog.FromContext(ctx).Info("Could not delete a migrated seed Secret", "err", derr)
			}
		}
	}
	s.mu.Lock()
	if len(s.known) >= maxKnownSeeds {
		// Deleted parents' seeds are never removed one by one: start over,
		// and read each live parent's Secret again.
		clear(s.known)
	}
	s.known[uid] = knownSeed{Seed: b, secret: obj.GetUID()}
	s.mu.Unlock()
	return b, mark, nil
}

// legacy returns parent's seed Secret of the legacy name, or nil when
// there is none that is this parent's (a Secret of that name owned by
// another parent, of the same Kind in another group, stays that
// parent's).
func (s *Store) legacy(ctx context.Context, secrets dynamic.ResourceInterface, parent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	old := legacySeedSecretName(parent)
	if old == seedSecretName(parent) {
		return nil, nil
	}
	obj, err := secrets.Get(ctx, old, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the seed Secret of the old name %s: %w", old, err)
	}
	if _, err := seedFrom(obj, parent.GetUID()); err != nil {
		return nil, nil
	}
	return obj, nil
}

// dropLegacy deletes parent's seed Secret of the legacy name, once its
// data is in the new one.
func (s *Store) dropLegacy(ctx context.Context, secrets dynamic.ResourceInterface, parent *unstructured.Unstructured) error {
	old := legacySeedSecretName(parent)
	obj, err := secrets.Get(ctx, old, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete the seed Secret of the old name %s: %w", old, err)
	}
	uid := obj.GetUID()
	err = secrets.Delete(ctx, old, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete the seed Secret of the old name %s: %w", old, err)
	}
	return nil
}

// maxKnownSeeds bounds the seeds kept in memory (about 100 bytes each).
const maxKnownSeeds = 100_000

// create makes a new seed Secret for parent, holding data, or a new
// seed when data is nil.
func (s *Store) create(ctx context.Context, secrets dynamic.ResourceInterface, parent *unstructured.Unstructured, name string, data map[string]any) (*unstructured.Unstructured, error) {
	if data == nil {
		seed := make([]byte, 32)
		if _, err := rand.Read(seed); err != nil {
			return nil, err
		}
		data = map[string]any{"seed": base64.StdEncoding.EncodeToString(seed)}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{
			"name": name, "namespace": parent.GetNamespace(),
			"annotations": map[string]any{AnnotationSeedOf: parent.GetAPIVersion() + "/" + parent.GetKind() + "/" + parent.GetName()},
			"ownerReferences": []any{map[string]any{
				"apiVersion": parent.GetAPIVersion(), "kind": parent.GetKind(), "name": parent.GetName(), "uid": string(parent.GetUID()),
			}},
		},
		"data": data,
	}}
	return secrets.Create(ctx, obj, metav1.CreateOptions{})
}

// seedFrom reads the seed, and the kept values, of a Secret that must be
// owned by uid.
func seedFrom(obj *unstructured.Unstructured, uid types.UID) (render.Seed, error) {
	owned := false
	for _, r := range obj.GetOwnerReferences() {
		owned = owned || r.UID == uid
	}
	if !owned {
		return render.Seed{}, fmt.Errorf("it exists but is not this parent's (owners %v): its random values would change when it goes; delete it, or wait for the garbage collector to", ownerUIDs(obj))
	}
	data, _, _ := unstructured.NestedMap(obj.Object, "data")
	enc, _ := data["seed"].(string)
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(b) < 16 {
		return render.Seed{}, fmt.Errorf("data.seed is not 16 or more bytes of base64")
	}
	out := render.Seed{Bytes: b}
	for k, v := range data {
		enc, _ := v.(string)
		if !strings.HasPrefix(k, chart.GeneratedKeyPrefix) {
			continue
		}
		val, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			continue // made again, and written over
		}
		if out.Kept == nil {
			out.Kept = map[string]string{}
		}
		out.Kept[k] = string(val)
	}
	return out, nil
}

// Keep writes the generated values of a render of parent that its seed
// Secret does not hold yet, before the children that hold them are
// applied: after a restart, the same calls return the same keys and
// certificates. When the Secret would pass maxKeptBytes, the values this
// render did not use (made for inputs since changed) are dropped.
func (s *Store) Keep(ctx context.Context, parent *unstructured.Unstructured, generated map[string]string) error {
	uid := parent.GetUID()
	s.mu.Lock()
	cur, ok := s.known[uid]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("keep generated values of %s %s/%s: its seed was not read", parent.GetKind(), parent.GetNamespace(), parent.GetName())
	}
	patch := map[string]any{}
	size := 0
	for k, v := range cur.Kept {
		size += len(k) + len(v)
	}
	for k, v := range generated {
		if old, ok := cur.Kept[k]; !ok || old != v {
			patch[k] = base64.StdEncoding.EncodeToString([]byte(v))
			size += len(k) + len(v)
		}
	}
	if len(patch) == 0 {
		return nil
	}
	next := make(map[string]string, len(cur.Kept)+len(patch))
	for k, v := range cur.Kept {
		next[k] = v
	}
	for k, v := range generated {
		next[k] = v
	}
	if size > maxKeptBytes {
		for k := range cur.Kept {
			if _, used := generated[k]; !used {
				patch[k] = nil // a merge patch's null deletes the key
				delete(next, k)
			}
		}
	}
	// The Secret's UID is the patch's precondition: one made again by
	// someone else is read afresh (and judged) by the next render.
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": string(cur.secret)}, "data": patch})
	if err != nil {
		return err
	}
	name := seedSecretName(parent)
	secrets := s.client.Resource(secretsGVR).Namespace(parent.GetNamespace())
	obj, err := secrets.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		// Deleted while Loom knew the seed: made again from what Loom
		// knows, so nothing is lost.
		data := map[string]any{"seed": base64.StdEncoding.EncodeToString(cur.Bytes)}
		for k, v := range next {
			data[k] = base64.StdEncoding.EncodeToString([]byte(v))
		}
		obj, err = s.create(ctx, secrets, parent, name, data)
	}
	if err != nil {
		s.forget(uid) // read again by the next render
		return fmt.Errorf("keep generated values in seed Secret %s/%s: %w", parent.GetNamespace(), name, err)
	}
	s.mu.Lock()
	s.known[uid] = knownSeed{Seed: render.Seed{Bytes: cur.Bytes, Kept: next}, secret: obj.GetUID()}
	s.mu.Unlock()
	return nil
}

// maxKeptBytes bounds the generated values a seed Secret holds (the API
// server takes Secrets up to 1 MiB, base64 included).
const maxKeptBytes = 512 << 10

// forget drops what Loom knows of a parent's seed.
func (s *Store) forget(uid types.UID) {
	s.mu.Lock()
	delete(s.known, uid)
	s.mu.Unlock()
}

func ownerUIDs(obj *unstructured.Unstructured) []string {
	var out []string
	for _, r := range obj.GetOwnerReferences() {
		out = append(out, string(r.UID))
	}
	return out
}
