package pack

import (
	"fmt"
	"reflect"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

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
