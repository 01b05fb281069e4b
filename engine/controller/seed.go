package controller

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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
)

// AnnotationSeedOf names, on a seed Secret, the parent whose seed it is.
const AnnotationSeedOf = "loom.dev/seed-of"

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// seedStore keeps the seed of each parent whose chart calls a random
// function (chart.SeededFuncs) in an immutable Secret of the parent's
// namespace, owned by the parent (not as its controller: it is no child,
// never applied nor pruned; the garbage collector deletes it with the
// parent). Who may read the namespace's Secrets may read the seed, and
// so may read what the chart derives from it, as they could read the
// Secret the chart writes; nobody else can derive the values from what
// they can read. Every Loom process, after a restart or a change of
// leader, reads the same seed.
type seedStore struct {
	client dynamic.Interface
	mu     sync.Mutex
	known  map[types.UID][]byte
}

func newSeedStore(client dynamic.Interface) *seedStore {
	return &seedStore{client: client, known: map[types.UID][]byte{}}
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

// seed returns parent's seed: the one Loom knows, the one its Secret
// holds, or a new one in a new Secret. A Secret of that name that is not
// this parent's (another owner UID: an earlier parent of the same name
// that the garbage collector has not removed yet, or someone else's) is
// an error, retried: taking its seed would give values that change when
// it goes. A parent whose seed is still in a Secret of the legacy name
// (legacySeedSecretName) keeps it: it is copied to the new name, and the
// old Secret deleted.
func (s *seedStore) seed(ctx context.Context, parent *unstructured.Unstructured) ([]byte, error) {
	uid := parent.GetUID()
	s.mu.Lock()
	b, ok := s.known[uid]
	s.mu.Unlock()
	if ok {
		return b, nil
	}
	secrets := s.client.Resource(secretsGVR).Namespace(parent.GetNamespace())
	name := seedSecretName(parent)
	obj, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		var data map[string]any
		if data, err = s.legacy(ctx, secrets, parent); err == nil {
			obj, err = s.create(ctx, secrets, parent, name, data)
			if apierrors.IsAlreadyExists(err) { // another Loom made it first
				obj, err = secrets.Get(ctx, name, metav1.GetOptions{})
			}
		}
		if err == nil && data != nil {
			// The seed is safe in the new Secret; an old one left behind
			// (no delete permission yet) goes with the parent.
			if derr := s.dropLegacy(ctx, secrets, parent); derr != nil {
				klog.FromContext(ctx).Info("Could not delete a migrated seed Secret", "err", derr)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("seed Secret %s/%s: %w", parent.GetNamespace(), name, err)
	}
	b, err = seedFrom(obj, uid)
	if err != nil {
		return nil, fmt.Errorf("seed Secret %s/%s: %w", parent.GetNamespace(), name, err)
	}
	s.mu.Lock()
	if len(s.known) >= maxKnownSeeds {
		// Deleted parents' seeds are never removed one by one: start over,
		// and read each live parent's Secret again.
		clear(s.known)
	}
	s.known[uid] = b
	s.mu.Unlock()
	return b, nil
}

// legacy returns the data of parent's seed Secret of the legacy name, or
// nil when there is none that is this parent's (a Secret of that name
// owned by another parent, of the same Kind in another group, stays
// that parent's).
func (s *seedStore) legacy(ctx context.Context, secrets dynamic.ResourceInterface, parent *unstructured.Unstructured) (map[string]any, error) {
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
	data, _, _ := unstructured.NestedMap(obj.Object, "data")
	return data, nil
}

// dropLegacy deletes parent's seed Secret of the legacy name, once its
// data is in the new one.
func (s *seedStore) dropLegacy(ctx context.Context, secrets dynamic.ResourceInterface, parent *unstructured.Unstructured) error {
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
func (s *seedStore) create(ctx context.Context, secrets dynamic.ResourceInterface, parent *unstructured.Unstructured, name string, data map[string]any) (*unstructured.Unstructured, error) {
	if data == nil {
		seed := make([]byte, 32)
		if _, err := rand.Read(seed); err != nil {
			return nil, err
		}
		data = map[string]any{"seed": base64.StdEncoding.EncodeToString(seed)}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "immutable": true,
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

// seedFrom reads the seed of a Secret that must be owned by uid.
func seedFrom(obj *unstructured.Unstructured, uid types.UID) ([]byte, error) {
	owned := false
	for _, r := range obj.GetOwnerReferences() {
		owned = owned || r.UID == uid
	}
	if !owned {
		return nil, fmt.Errorf("it exists but is not this parent's (owners %v): its random values would change when it goes; delete it, or wait for the garbage collector to", ownerUIDs(obj))
	}
	enc, _, _ := unstructured.NestedString(obj.Object, "data", "seed")
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(b) < 16 {
		return nil, fmt.Errorf("data.seed is not 16 or more bytes of base64")
	}
	return b, nil
}

func ownerUIDs(obj *unstructured.Unstructured) []string {
	var out []string
	for _, r := range obj.GetOwnerReferences() {
		out = append(out, string(r.UID))
	}
	return out
}

// Seed is the parent's seed (render.Seeder). A failure is the
// environment's, retried like a lookup that failed.
func (r *lookupReader) Seed(parent *unstructured.Unstructured) ([]byte, error) {
	b, err := r.lc.seeds.seed(r.ctx, parent)
	if err != nil {
		return nil, r.fail(err)
	}
	return b, nil
}
