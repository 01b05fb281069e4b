package pack

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
)

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
