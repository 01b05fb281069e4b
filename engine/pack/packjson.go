package pack

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
)

// lastApplied is kubectl's copy of the last applied object
// (corev1.LastAppliedConfigAnnotation), which can be an object's size again.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Strip drops what no reader of a parent needs from obj, in place, before
// it enters a cache: managedFields and kubectl's last-applied copy, often
// more than half of an object's size together. It returns obj.
func Strip(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj.SetManagedFields(nil)
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, lastApplied)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	return obj
}

// SlimJSON packs the JSON of an object as Pack(Slim(obj, manager)) would,
// without decoding it into maps first: most values stay the API server's
// bytes, and only the fields Packed keeps typed, the loom.dev/ annotations
// and manager's managedFields entry are read. Informers pack watch events
// with it; decoding each event into maps was the largest part of Loom's
// CPU. A value's syntax is checked when Object decodes it.
func SlimJSON(data []byte, manager string) (*Packed, error) {
	return packJSON(data, slimPolicy(manager))
}

// StripJSON packs the JSON of an object as Pack(Strip(obj)) would, reading
// only its metadata.
func StripJSON(data []byte) (*Packed, error) { return packJSON(data, &stripPolicy) }

// policy is what a JSON packer keeps of an object; packJSON is the one walk
// that applies it. Slim's and Strip's policies are the two in use.
type policy struct {
	// top reports whether a top-level member is kept whole; metadata is
	// packed apart, and so is spec when spec is set.
	top func(key []byte) bool
	// spec, when not nil, names the only spec fields kept.
	spec sets.Set[string]
	// meta reports whether a metadata field is kept (managedFields and
	// annotations apart).
	meta func(key []byte) bool
	// annotation reports whether an annotation is kept.
	annotation func(key []byte) bool
	// asSent keeps metadata or annotations that are not JSON objects as
	// they were sent; otherwise they are dropped.
	asSent bool
	// fingerprint replaces managedFields with the Fingerprint of
	// manager's entry (under fieldsKey); otherwise they are dropped.
	fingerprint bool
	manager     string
	// decoded does the same to a decoded object, for the objects the walk
	// leaves to the unstructured path (a key it reads given twice).
	decoded func(*unstructured.Unstructured) *unstructured.Unstructured
}

// stripPolicy keeps all of an object but its managedFields and kubectl's
// last-applied copy, as Strip does.
var stripPolicy = policy{
	top:        func([]byte) bool { return true },
	meta:       func([]byte) bool { return true },
	annotation: func(key []byte) bool { return string(key) != lastApplied },
	asSent:     true,
	decoded:    Strip,
}

// slimPolicy keeps what Slim keeps of an object: the status, the spec
// fields kstatus reads, the metadata in slimMetadata, Loom's loom.dev/
// annotations and the fingerprint of manager's managedFields entry.
func slimPolicy(manager string) *policy {
	return &policy{
		top:         func(key []byte) bool { return string(key) == "status" },
		spec:        slimSpecSet,
		meta:        func(key []byte) bool { return slimMeta.Has(string(key)) },
		annotation:  func(key []byte) bool { return bytes.HasPrefix(key, []byte("loom.dev/")) },
		fingerprint: true,
		manager:     manager,
		decoded:     func(u *unstructured.Unstructured) *unstructured.Unstructured { return Slim(u, manager) },
	}
}

// packJSON packs the JSON of an object as Pack(pol.decoded(obj)) would.
func packJSON(data []byte, pol *policy) (*Packed, error) {
	p := &Packed{}
	var out objectWriter
	var spec []byte
	fp := ""
	_, err := eachTop(data, p, &out, func(key, rawKey, val []byte) error {
		switch {
		case string(key) == "metadata":
			return pol.metadata(p, &out, rawKey, val, &fp)
		case string(key) == "spec" && pol.spec != nil:
			spec = val
		case pol.top(key):
			out.member(rawKey, val)
		}
		return nil
	})
	if errors.Is(err, errDuplicate) {
		return packDecoded(data, pol.decoded)
	}
	if err != nil {
		return nil, fmt.Errorf("pack %s %s/%s: %w", p.kind, p.namespace, p.name, err)
	}
	if pol.fingerprint {
		out.member([]byte(`"`+fieldsKey+`"`), []byte(strconv.Quote(fp)))
	}
	if spec != nil {
		var keep objectWriter
		_, err := eachMember(spec, func(key, rawKey, val []byte) error {
			if pol.spec.Has(string(key)) {
				keep.member(rawKey, val)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("pack %s %s/%s: spec: %w", p.kind, p.namespace, p.name, err)
		}
		if !keep.empty() {
			out.member([]byte(`"spec"`), keep.bytes())
		}
	}
	p.raw = out.final()
	return p, nil
}

// metadata packs an object's metadata into p (the typed fields) and out
// (the rest that pol keeps); fp receives the fingerprint of managedFields.
func (pol *policy) metadata(p *Packed, out *objectWriter, rawKey, val []byte, fp *string) error {
	var m objectWriter
	l := metaLifter{p: p, w: &m}
	kept := 0
	isObj, err := eachMember(val, func(key, rawKey, val []byte) error {
		switch string(key) {
		case "managedFields":
			if err := l.seen.see(key); err != nil {
				return err
			}
			if pol.fingerprint {
				*fp = fingerprintJSON(val, pol.manager)
			}
			return nil
		case "annotations":
			if err := l.seen.see(key); err != nil {
				return err
			}
			ann, keep, err := pol.annotations(val)
			if err != nil || !keep {
				return err
			}
			kept++
			m.member(rawKey, ann)
			return nil
		}
		if !pol.meta(key) {
			return nil
		}
		kept++
		return l.member(key, rawKey, val)
	})
	if err != nil {
		return err
	}
	if !isObj {
		if pol.asSent {
			out.member(rawKey, val)
		}
		return nil
	}
	return l.close(rawKey, out, kept)
}

// annotations returns the JSON of the annotations pol keeps of val, and
// whether to keep any: none when no annotation is kept.
func (pol *policy) annotations(val []byte) ([]byte, bool, error) {
	var ann objectWriter
	isObj, err := eachMember(val, func(key, rawKey, val []byte) error {
		if pol.annotation(key) {
			ann.member(rawKey, val)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, false, err
	case !isObj:
		return val, pol.asSent, nil
	case ann.empty():
		return nil, false, nil
	}
	return ann.bytes(), true, nil
}

// errDuplicate is a key that Loom reads given twice in one object: the
// packers leave such an object to the unstructured path, whose decoder
// keeps the last.
var errDuplicate = errors.New("a key is given twice")

// keySet notes the keys seen in one JSON object, of those a packer reads.
type keySet []string

func (ks *keySet) see(key []byte) error {
	for _, k := range *ks {
		if k == string(key) {
			return errDuplicate
		}
	}
	*ks = append(*ks, string(key))
	return nil
}

var (
	slimMeta    = sets.New(slimMetadata...)
	slimSpecSet = sets.New(slimSpec...)
	// typedMeta are the metadata fields Pack keeps typed: a packer reads
	// them, and leaves every other field as JSON.
	typedMeta = sets.New("name", "namespace", "uid", "resourceVersion", "generation", "ownerReferences")
)

// eachTop calls fn with each member of an object's JSON but apiVersion and
// kind, which it lifts into p as Pack does (or writes to out when they are
// not strings). It fails when data is not an object.
func eachTop(data []byte, p *Packed, out *objectWriter, fn func(key, rawKey, val []byte) error) (bool, error) {
	var seen keySet
	isObj, err := eachMember(data, func(key, rawKey, val []byte) error {
		switch string(key) {
		case "apiVersion", "kind", "metadata", "spec", "status":
			if err := seen.see(key); err != nil {
				return err
			}
		}
		switch string(key) {
		case "apiVersion", "kind":
			s, ok := jsonString(val)
			if !ok || s == "" {
				out.member(rawKey, val)
				return nil
			}
			if string(key) == "kind" {
				p.kind = intern(s)
			} else {
				p.apiVersion = intern(s)
			}
			return nil
		}
		return fn(key, rawKey, val)
	})
	if err == nil && !isObj {
		err = fmt.Errorf("not a JSON object: %.20q", data)
	}
	return isObj, err
}

// packDecoded packs data the unstructured way: decoded, then trimmed.
func packDecoded(data []byte, trim func(*unstructured.Unstructured) *unstructured.Unstructured) (*Packed, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	return Pack(trim(u))
}
