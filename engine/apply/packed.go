package apply

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Packed is an object as Loom's informer caches keep it: the few metadata
// fields that key, index and route it, typed, and the whole object as JSON,
// decoded again (Object) only when a reconcile reads it.
//
// An unstructured object keeps every field as a map entry with boxed
// values; a child slimmed by Slim still takes about 4 KiB that way, and its
// JSON a fifth of that. A reconcile reads one parent and its few children,
// so decoding them on demand costs microseconds, while the cache holds
// every object of the fleet all the time.
//
// Its ObjectMeta holds name, namespace, UID, resourceVersion, generation
// and the controller ownerReference only (not the other owners, labels or
// annotations): read those from Object.
type Packed struct {
	metav1.ObjectMeta
	apiVersion, kind string
	raw              []byte
}

// Pack packs obj. The API versions and kinds of a fleet are a handful of
// strings, kept once each.
func Pack(obj *unstructured.Unstructured) (*Packed, error) {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("pack %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	p := &Packed{
		apiVersion: intern(obj.GetAPIVersion()),
		kind:       intern(obj.GetKind()),
		raw:        raw,
	}
	p.Name = obj.GetName()
	p.Namespace = obj.GetNamespace()
	p.UID = obj.GetUID()
	p.ResourceVersion = obj.GetResourceVersion()
	p.Generation = obj.GetGeneration()
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		r := *ref
		r.APIVersion, r.Kind = intern(r.APIVersion), intern(r.Kind)
		p.OwnerReferences = []metav1.OwnerReference{r}
	}
	return p, nil
}

func intern(s string) string { return unique.Make(s).Value() }

// Object decodes the packed object into a new unstructured object, which
// the caller owns.
func (p *Packed) Object() (*unstructured.Unstructured, error) {
	var m map[string]any
	// utiljson keeps integers as int64, as the API machinery expects.
	if err := utiljson.Unmarshal(p.raw, &m); err != nil {
		return nil, fmt.Errorf("unpack %s %s/%s: %w", p.kind, p.Namespace, p.Name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// Size is the length of the packed JSON.
func (p *Packed) Size() int { return len(p.raw) }

// GetAPIVersion returns the object's apiVersion.
func (p *Packed) GetAPIVersion() string { return p.apiVersion }

// GetKind returns the object's kind.
func (p *Packed) GetKind() string { return p.kind }

// GroupKind returns the object's group and kind.
func (p *Packed) GroupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(p.apiVersion, p.kind).GroupKind()
}

// Ref returns the object's Ref.
func (p *Packed) Ref() Ref {
	return Ref{GroupKind: p.GroupKind(), Namespace: p.Namespace, Name: p.Name}
}

// Equal reports whether q packs the same object as p, byte for byte.
func (p *Packed) Equal(q *Packed) bool { return bytes.Equal(p.raw, q.raw) }

// GetObjectKind returns the object's kind, read-only.
func (p *Packed) GetObjectKind() schema.ObjectKind {
	return &metav1.TypeMeta{APIVersion: p.apiVersion, Kind: p.kind}
}

// DeepCopyObject returns a copy; the packed JSON is never modified, so the
// copy shares it.
func (p *Packed) DeepCopyObject() runtime.Object {
	out := &Packed{apiVersion: p.apiVersion, kind: p.kind, raw: p.raw}
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

var _ runtime.Object = (*Packed)(nil)
