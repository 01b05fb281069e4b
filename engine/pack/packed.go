package pack

import (
	"encoding/json"
	"fmt"
	"reflect"
	"unique"

	"github.com/loom-operator/loom/engine/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Packed is an object as Loom's informer caches keep it: the few metadata
// fields that key, index and route it, typed, and the whole object as JSON,
// decoded again (Object) only when a reconcile reads it.
//
// An unstructured object keeps every field as a map entry with boxed
// values, several times the size of its JSON. A reconcile reads one parent
// and its few children, so decoding them on demand is cheap, while the
// cache holds every object of the fleet all the time.
//
// Its typed metadata (GetObjectMeta) is name, namespace, UID,
// resourceVersion, generation and the controller ownerReference only, not
// the other owners, labels or annotations: read those from Object. An
// object with neither name nor UID, a watch bookmark, has its annotations
// too.
type Packed struct {
	name, namespace  string
	uid              types.UID
	resourceVersion  string
	generation       int64
	apiVersion, kind string
	// owner is the controller ownerReference; owner.UID is empty when
	// there is none.
	owner packedOwner
	raw   []byte
}

// packedOwner is a controller ownerReference, without its pointers.
type packedOwner struct {
	apiVersion, kind, name string
	uid                    types.UID
	blockOwnerDeletion     bool
	// lifted is set when the object's ownerReferences are just this one,
	// left out of the JSON.
	lifted bool
}

// Pack packs obj. The API versions and kinds of a fleet are a handful of
// strings, kept once each. The fields kept typed (apiVersion, kind, name,
// namespace, uid, resourceVersion, generation, and the ownerReferences
// when they are just the controller reference) are left out of the JSON,
// and put back by Object: they are a third of a slimmed child's JSON.
func Pack(obj *unstructured.Unstructured) (*Packed, error) {
	p := &Packed{}
	top := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		top[k] = v
	}
	p.apiVersion = intern(liftString(top, "apiVersion"))
	p.kind = intern(liftString(top, "kind"))
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		p.owner = packedOwner{apiVersion: intern(ref.APIVersion), kind: intern(ref.Kind), name: ref.Name, uid: ref.UID,
			blockOwnerDeletion: ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion}
	}
	if md, ok := top["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			m[k] = v
		}
		p.name = liftString(m, "name")
		p.namespace = liftString(m, "namespace")
		p.uid = types.UID(liftString(m, "uid"))
		p.resourceVersion = liftString(m, "resourceVersion")
		if g, ok := m["generation"].(int64); ok && g != 0 {
			p.generation = g
			delete(m, "generation")
		}
		if refs, ok := m["ownerReferences"].([]any); ok && len(refs) == 1 && p.owner.uid != "" &&
			reflect.DeepEqual(refs[0], p.owner.object()) {
			p.owner.lifted = true
			delete(m, "ownerReferences")
		}
		if len(m) == 0 && len(md) != 0 {
			delete(top, "metadata")
		} else {
			top["metadata"] = m
		}
	}
	raw, err := json.Marshal(top)
	if err != nil {
		return nil, fmt.Errorf("pack %s %s/%s: %w", p.kind, p.namespace, p.name, err)
	}
	p.raw = raw
	return p, nil
}

// liftString removes m[key] and returns it if it is a string other than
// "", which Object puts back; else it leaves it, and returns "".
func liftString(m map[string]any, key string) string {
	s, ok := m[key].(string)
	if !ok || s == "" {
		return ""
	}
	delete(m, key)
	return s
}

func intern(s string) string { return unique.Make(s).Value() }

// object returns the ownerReference as the API server's JSON has it.
func (o packedOwner) object() map[string]any {
	m := map[string]any{"apiVersion": o.apiVersion, "kind": o.kind, "name": o.name, "uid": string(o.uid), "controller": true}
	if o.blockOwnerDeletion {
		m["blockOwnerDeletion"] = true
	}
	return m
}

// Object decodes the packed object into a new unstructured object, which
// the caller owns.
func (p *Packed) Object() (*unstructured.Unstructured, error) {
	var m map[string]any
	// utiljson keeps integers as int64, as the API machinery expects.
	if err := utiljson.Unmarshal(p.raw, &m); err != nil {
		return nil, fmt.Errorf("unpack %s %s/%s: %w", p.kind, p.namespace, p.name, err)
	}
	if m == nil {
		m = map[string]any{}
	}
	putString(m, "apiVersion", p.apiVersion)
	putString(m, "kind", p.kind)
	if p.name != "" || p.namespace != "" || p.uid != "" || p.resourceVersion != "" || p.generation != 0 || p.owner.lifted {
		md, ok := m["metadata"].(map[string]any)
		if !ok {
			md = map[string]any{}
			m["metadata"] = md
		}
		putString(md, "name", p.name)
		putString(md, "namespace", p.namespace)
		putString(md, "uid", string(p.uid))
		putString(md, "resourceVersion", p.resourceVersion)
		if p.generation != 0 {
			md["generation"] = p.generation
		}
		if p.owner.lifted {
			md["ownerReferences"] = []any{p.owner.object()}
		}
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func putString(m map[string]any, key, s string) {
	if s != "" {
		m[key] = s
	}
}

// GetAPIVersion returns the object's apiVersion.
func (p *Packed) GetAPIVersion() string { return p.apiVersion }

// GetKind returns the object's kind.
func (p *Packed) GetKind() string { return p.kind }

// GroupKind returns the object's group and kind.
func (p *Packed) GroupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(p.apiVersion, p.kind).GroupKind()
}

// Ref returns the object's Ref.
func (p *Packed) Ref() object.Ref {
	return object.Ref{GroupKind: p.GroupKind(), Namespace: p.namespace, Name: p.name}
}

// GetName returns the object's name.
func (p *Packed) GetName() string { return p.name }

// GetNamespace returns the object's namespace.
func (p *Packed) GetNamespace() string { return p.namespace }

// GetUID returns the object's UID.
func (p *Packed) GetUID() types.UID { return p.uid }

// GetResourceVersion returns the object's resourceVersion.
func (p *Packed) GetResourceVersion() string { return p.resourceVersion }

// Controller returns a copy of the object's controller ownerReference, or
// nil.
func (p *Packed) Controller() *metav1.OwnerReference {
	if p.owner.uid == "" {
		return nil
	}
	t := true
	ref := &metav1.OwnerReference{APIVersion: p.owner.apiVersion, Kind: p.owner.kind, Name: p.owner.name, UID: p.owner.uid, Controller: &t}
	if p.owner.blockOwnerDeletion {
		ref.BlockOwnerDeletion = &t
	}
	return ref
}

// ControllerUID returns the UID of the object's controller owner, or "".
func (p *Packed) ControllerUID() types.UID { return p.owner.uid }

// GetObjectMeta returns a new ObjectMeta with the typed metadata (see
// Packed), so that meta.Accessor, and with it the informers' key
// functions, read a packed object.
func (p *Packed) GetObjectMeta() metav1.Object {
	m := &metav1.ObjectMeta{Name: p.name, Namespace: p.namespace, UID: p.uid,
		ResourceVersion: p.resourceVersion, Generation: p.generation}
	if ref := p.Controller(); ref != nil {
		m.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	if p.name == "" && p.uid == "" {
		// A watch bookmark: a reflector reads its annotations.
		if u, err := p.Object(); err == nil {
			m.Annotations = u.GetAnnotations()
		}
	}
	return m
}

// GetObjectKind returns the object's kind, read-only.
func (p *Packed) GetObjectKind() schema.ObjectKind {
	return &metav1.TypeMeta{APIVersion: p.apiVersion, Kind: p.kind}
}

// DeepCopyObject returns a copy; the packed JSON is never modified, so the
// copy shares it.
func (p *Packed) DeepCopyObject() runtime.Object {
	out := *p
	return &out
}

var (
	_ runtime.Object            = (*Packed)(nil)
	_ metav1.ObjectMetaAccessor = (*Packed)(nil)
)
