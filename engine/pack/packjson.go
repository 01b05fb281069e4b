package pack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
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
	p := &Packed{}
	var out objectWriter
	fp := ""
	var spec []byte
	_, err := eachTop(data, p, &out, func(key, rawKey, val []byte) error {
		switch string(key) {
		case "status":
			out.member(rawKey, val)
		case "spec":
			spec = val
		case "metadata":
			var m objectWriter
			l := metaLifter{p: p, w: &m}
			kept := 0
			isObj, err := eachMember(val, func(key, rawKey, val []byte) error {
				switch string(key) {
				case "managedFields", "annotations":
					if err := l.seen.see(key); err != nil {
						return err
					}
				}
				switch string(key) {
				case "managedFields":
					fp = fingerprintJSON(val, manager)
					return nil
				case "annotations":
					var ann objectWriter
					_, err := eachMember(val, func(key, rawKey, val []byte) error {
						if bytes.HasPrefix(key, []byte("loom.dev/")) {
							ann.member(rawKey, val)
						}
						return nil
					})
					if !ann.empty() {
						kept++
						m.member(rawKey, ann.bytes())
					}
					return err
				}
				if !slimMeta.Has(string(key)) {
					return nil
				}
				kept++
				return l.member(key, rawKey, val)
			})
			if err != nil || !isObj {
				return err
			}
			return l.close(rawKey, &out, kept)
		}
		return nil
	})
	if errors.Is(err, errDuplicate) {
		return packDecoded(data, func(u *unstructured.Unstructured) *unstructured.Unstructured { return Slim(u, manager) })
	}
	if err != nil {
		return nil, fmt.Errorf("pack %s %s/%s: %w", p.kind, p.namespace, p.name, err)
	}
	out.member([]byte(`"`+fieldsKey+`"`), []byte(strconv.Quote(fp)))
	if spec != nil {
		var keep objectWriter
		_, err := eachMember(spec, func(key, rawKey, val []byte) error {
			if slimSpecSet.Has(string(key)) {
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

// StripJSON packs the JSON of an object as Pack(Strip(obj)) would, reading
// only its metadata.
func StripJSON(data []byte) (*Packed, error) {
	p := &Packed{}
	var out objectWriter
	_, err := eachTop(data, p, &out, func(key, rawKey, val []byte) error {
		if string(key) != "metadata" {
			out.member(rawKey, val)
			return nil
		}
		var m objectWriter
		l := metaLifter{p: p, w: &m}
		kept := 0
		isObj, err := eachMember(val, func(key, rawKey, val []byte) error {
			switch string(key) {
			case "managedFields":
				return nil
			case "annotations":
				if err := l.seen.see(key); err != nil {
					return err
				}
				var ann objectWriter
				isObj, err := eachMember(val, func(key, rawKey, val []byte) error {
					if string(key) != lastApplied {
						ann.member(rawKey, val)
					}
					return nil
				})
				if err != nil {
					return err
				}
				switch {
				case !isObj:
					m.member(rawKey, val)
				case !ann.empty():
					m.member(rawKey, ann.bytes())
				default:
					return nil
				}
				kept++
				return nil
			}
			kept++
			return l.member(key, rawKey, val)
		})
		if err != nil {
			return err
		}
		if !isObj {
			out.member(rawKey, val)
			return nil
		}
		return l.close(rawKey, &out, kept)
	})
	if errors.Is(err, errDuplicate) {
		return packDecoded(data, Strip)
	}
	if err != nil {
		return nil, fmt.Errorf("pack %s %s/%s: %w", p.kind, p.namespace, p.name, err)
	}
	p.raw = out.final()
	return p, nil
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

// metaLifter lifts the metadata fields Packed keeps typed out of an
// object's metadata, as Pack does, and writes the others.
type metaLifter struct {
	p *Packed
	w *objectWriter
	// owners is the ownerReferences' JSON, decided on by close.
	owners, ownersKey []byte
	seen              keySet
}

func (l *metaLifter) member(key, rawKey, val []byte) error {
	if typedMeta.Has(string(key)) {
		if err := l.seen.see(key); err != nil {
			return err
		}
	}
	var dst *string
	switch string(key) {
	case "name":
		dst = &l.p.name
	case "namespace":
		dst = &l.p.namespace
	case "uid":
		dst = (*string)(&l.p.uid)
	case "resourceVersion":
		dst = &l.p.resourceVersion
	case "generation":
		// As utiljson decodes it: an int64 if the number parses as one.
		if g, err := strconv.ParseInt(string(val), 10, 64); err == nil && g != 0 {
			l.p.generation = g
			return nil
		}
	case "ownerReferences":
		l.owners, l.ownersKey = val, rawKey
		return nil
	}
	if dst != nil {
		if s, ok := jsonString(val); ok && s != "" {
			*dst = s
			return nil
		}
	}
	l.w.member(rawKey, val)
	return nil
}

// close decides on the ownerReferences and writes the metadata to out:
// left out when every one of its kept fields was lifted, as Pack does.
func (l *metaLifter) close(rawKey []byte, out *objectWriter, kept int) error {
	if l.owners != nil {
		owner, lifted, ok := ownersFast(l.owners)
		if !ok {
			var err error
			if owner, lifted, err = ownersDecoded(l.owners); err != nil {
				return err
			}
		}
		l.p.owner = owner
		l.p.owner.lifted = lifted
		if !lifted {
			l.w.member(l.ownersKey, l.owners)
		}
	}
	if l.w.empty() && kept != 0 {
		return nil
	}
	out.member(rawKey, l.w.bytes())
	return nil
}

// ownersDecoded finds the controller in the JSON of ownerReferences, and
// whether it is the only reference as the API server writes it (then Pack
// lifts it out of the JSON), the way Pack does: decoded.
func ownersDecoded(raw []byte) (owner packedOwner, lifted bool, err error) {
	var refs any
	if err := utiljson.Unmarshal(raw, &refs); err != nil {
		return owner, false, fmt.Errorf("decode metadata.ownerReferences: %w", err)
	}
	md := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"ownerReferences": refs}}}
	if ref := metav1.GetControllerOfNoCopy(md); ref != nil {
		owner = packedOwner{apiVersion: intern(ref.APIVersion), kind: intern(ref.Kind), name: ref.Name, uid: ref.UID,
			blockOwnerDeletion: ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion}
	}
	list, ok := refs.([]any)
	return owner, ok && len(list) == 1 && owner.uid != types.UID("") && reflect.DeepEqual(list[0], owner.object()), nil
}

// ownersFast is ownersDecoded for the ownerReferences the API server
// writes: objects with OwnerReference's string and boolean fields only,
// every string field set. ok is false for anything else, which
// ownersDecoded then reads.
func ownersFast(raw []byte) (owner packedOwner, lifted, ok bool) {
	n := 0
	found := false
	plain := false // the controller has controller: true and no blockOwnerDeletion: false
	isArr, err := eachElement(raw, func(el []byte) error {
		n++
		var ref packedOwner
		var controller, bod, hasBOD bool
		fields := 0
		isObj, err := eachMember(el, func(key, _, val []byte) error {
			var dst *string
			switch string(key) {
			case "apiVersion":
				dst = &ref.apiVersion
			case "kind":
				dst = &ref.kind
			case "name":
				dst = &ref.name
			case "uid":
				dst = (*string)(&ref.uid)
			case "controller", "blockOwnerDeletion":
				b, isBool := jsonBool(val)
				if !isBool {
					return errDone
				}
				if string(key) == "controller" {
					controller = b
				} else {
					bod, hasBOD = b, true
				}
				return nil
			default:
				return errDone
			}
			s, isStr := jsonString(val)
			if !isStr {
				return errDone
			}
			*dst = s
			fields++
			return nil
		})
		if err != nil || !isObj || fields != 4 {
			return errDone
		}
		if controller && !found {
			found = true
			owner = packedOwner{apiVersion: intern(ref.apiVersion), kind: intern(ref.kind), name: ref.name, uid: ref.uid,
				blockOwnerDeletion: bod}
			plain = !(hasBOD && !bod)
		}
		return nil
	})
	if err != nil || !isArr {
		return packedOwner{}, false, false
	}
	return owner, n == 1 && found && plain && owner.uid != "", true
}

// jsonBool returns the boolean raw holds, and whether raw is one.
func jsonBool(raw []byte) (bool, bool) {
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// fingerprintJSON is Fingerprint for the JSON of an object's managedFields:
// it finds manager's entry as OwnEntry does, and decodes only its fields.
func fingerprintJSON(raw []byte, manager string) string {
	fp := ""
	_, _ = eachElement(raw, func(er []byte) error {
		var isManager, isApply, isSub bool
		var apiVersion string
		var fields []byte
		isObj, err := eachMember(er, func(key, _, val []byte) error {
			s, _ := jsonString(val)
			switch string(key) {
			case "manager":
				isManager = val[0] == '"' && s == manager
			case "operation":
				isApply = val[0] == '"' && s == "Apply"
			case "subresource":
				isSub = s != ""
			case "apiVersion":
				apiVersion = s
			case "fieldsV1":
				fields = val
			}
			return nil
		})
		if err != nil || !isObj || !isManager || !isApply || isSub {
			return nil
		}
		if canon, ok := canonicalFields(fields, nil); ok {
			fp = fingerprintBytes(apiVersion, canon)
			return errDone
		}
		var v any
		if fields != nil {
			if err := json.Unmarshal(fields, &v); err != nil {
				return errDone
			}
		}
		fp = fingerprint(apiVersion, v)
		return errDone
	})
	return fp
}

// errDone stops a scan that found what it looked for.
var errDone = errors.New("done")

// canonicalFields appends to buf the JSON that json.Marshal writes for
// raw decoded, for a fieldsV1 tree: objects only, down to the empty ones
// at its leaves. Keys are sorted and written as json.Marshal writes
// strings. ok is false for anything else (a value of another type, a key
// twice), which the caller then decodes and marshals.
func canonicalFields(raw []byte, buf []byte) ([]byte, bool) {
	type member struct{ key, rawKey, val []byte }
	var members []member
	isObj, err := eachMember(raw, func(key, rawKey, val []byte) error {
		members = append(members, member{key, rawKey, val})
		return nil
	})
	if err != nil || !isObj {
		return nil, false
	}
	slices.SortFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	buf = append(buf, '{')
	for i, m := range members {
		if i > 0 {
			if bytes.Equal(members[i-1].key, m.key) {
				return nil, false
			}
			buf = append(buf, ',')
		}
		if marshalsAsIs(m.rawKey) {
			buf = append(buf, m.rawKey...)
		} else {
			k, err := json.Marshal(string(m.key))
			if err != nil {
				return nil, false
			}
			buf = append(buf, k...)
		}
		buf = append(buf, ':')
		var ok bool
		if buf, ok = canonicalFields(m.val, buf); !ok {
			return nil, false
		}
	}
	return append(buf, '}'), true
}

// marshalsAsIs reports whether json.Marshal writes the string that the
// JSON string literal raw holds as raw itself: printable ASCII with no
// escapes and none of the characters it escapes for HTML.
func marshalsAsIs(raw []byte) bool {
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= 0x80 || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// packDecoded packs data the unstructured way: decoded, then trimmed.
func packDecoded(data []byte, trim func(*unstructured.Unstructured) *unstructured.Unstructured) (*Packed, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	return Pack(trim(u))
}
