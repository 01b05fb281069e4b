package pack

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The packers of watch events (SlimJSON, StripJSON) split an object's JSON
// with this scanner instead of decoding it: they keep most values as the
// API server's bytes, and decode only the few fields Loom keeps typed.
// Finding where a value ends needs no more than matching quotes and
// brackets; a value's own syntax is checked when Object decodes it.

var errJSONEnd = errors.New("unexpected end of JSON input")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at d[i] ('"').
func skipString(d []byte, i int) (int, error) {
	for j := i + 1; j < len(d); j++ {
		switch d[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errJSONEnd
}

// skipValue returns the index after the value that starts at d[i].
func skipValue(d []byte, i int) (int, error) {
	if i >= len(d) {
		return 0, errJSONEnd
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				j, err := skipString(d, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errJSONEnd
	case '}', ']', ',', ':':
		return 0, fmt.Errorf("invalid character %q looking for a value", d[i])
	}
	j := i
	for j < len(d) && !isSpace(d[j]) && d[j] != ',' && d[j] != '}' && d[j] != ']' && d[j] != ':' {
		j++
	}
	return j, nil
}

// eachMember calls fn with each member of the JSON object d: its key,
// unquoted, the key as the JSON has it (quoted), and its value's bytes.
// ok is false when d is not an object (null, an array, a string...), with
// no error and no call.
func eachMember(d []byte, fn func(key, rawKey, val []byte) error) (ok bool, err error) {
	i := skipSpace(d, 0)
	if i >= len(d) || d[i] != '{' {
		if _, err := skipValue(d, i); err != nil {
			return false, err
		}
		return false, nil
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == '}' {
		return true, nil
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return false, errors.New("invalid JSON: expected an object key")
		}
		end, err := skipString(d, i)
		if err != nil {
			return false, err
		}
		rawKey := d[i:end]
		key, err := unquote(rawKey)
		if err != nil {
			return false, err
		}
		i = skipSpace(d, end)
		if i >= len(d) || d[i] != ':' {
			return false, errors.New("invalid JSON: expected ':' after an object key")
		}
		i = skipSpace(d, i+1)
		vend, err := skipValue(d, i)
		if err != nil {
			return false, err
		}
		if err := fn(key, rawKey, d[i:vend]); err != nil {
			return false, err
		}
		var done bool
		if i, done, err = next(d, vend, '}'); err != nil || done {
			return done, err
		}
	}
}

// next reads what follows a member or element that ends at d[i]: a comma,
// after which it returns the next one's start, or closing, which ends the
// object or array (done).
func next(d []byte, i int, closing byte) (int, bool, error) {
	i = skipSpace(d, i)
	switch {
	case i >= len(d):
		return 0, false, errJSONEnd
	case d[i] == ',':
		return skipSpace(d, i+1), false, nil
	case d[i] == closing:
		return i + 1, true, nil
	}
	return 0, false, fmt.Errorf("invalid character %q after a member or element", d[i])
}

// eachElement calls fn with each element of the JSON array d; ok is false
// when d is not an array.
func eachElement(d []byte, fn func(val []byte) error) (ok bool, err error) {
	i := skipSpace(d, 0)
	if i >= len(d) || d[i] != '[' {
		return false, nil
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return true, nil
	}
	for {
		end, err := skipValue(d, i)
		if err != nil {
			return false, err
		}
		if err := fn(d[i:end]); err != nil {
			return false, err
		}
		var done bool
		if i, done, err = next(d, end, ']'); err != nil || done {
			return done, err
		}
	}
}

// unquote returns the bytes a JSON string literal holds: a slice of raw,
// unless the string has escapes, which are decoded into new bytes.
func unquote(raw []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, fmt.Errorf("invalid JSON string %.20q", raw)
	}
	inner := raw[1 : len(raw)-1]
	ascii := true
	for _, c := range inner {
		if c == '\\' {
			return unquoteSlow(raw)
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	// Invalid UTF-8, which the decoder replaces with U+FFFD. The whole
	// string is checked once, after the scan: checking it at each
	// non-ASCII byte made a long non-ASCII string quadratic.
	if !ascii && !utf8.Valid(inner) {
		return unquoteSlow(raw)
	}
	return inner, nil
}

// unquoteSlow decodes a JSON string literal with encoding/json, for the
// strings that unquote cannot return as a slice of raw.
func unquoteSlow(raw []byte) ([]byte, error) {
	var s string
	err := json.Unmarshal(raw, &s)
	return []byte(s), err
}

// jsonString returns the string raw holds, and whether raw is a string.
func jsonString(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	s, err := unquote(raw)
	return string(s), err == nil
}

// objectWriter writes a JSON object member by member, from values that are
// JSON already.
type objectWriter struct{ b []byte }

func (w *objectWriter) member(rawKey, val []byte) {
	if len(w.b) == 0 {
		w.b = append(w.b, '{')
	} else {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, rawKey...)
	w.b = append(w.b, ':')
	w.b = append(w.b, val...)
}

func (w *objectWriter) empty() bool { return len(w.b) == 0 }

// bytes returns the object, "{}" if it has no members.
func (w *objectWriter) bytes() []byte {
	if len(w.b) == 0 {
		return []byte("{}")
	}
	return append(w.b, '}')
}

// final returns the object in a slice of its own length: a cache keeps it
// for the object's life, and the capacity that appending left would be
// kept with it (up to as much again).
func (w *objectWriter) final() []byte {
	b := w.bytes()
	return append(make([]byte, 0, len(b)), b...)
}

// JSONKind returns the apiVersion and kind of an object's JSON, and
// whether it has an items member (a list). It reads the top level only,
// and stops at the kind unless the kind names a list: the API server
// writes kind and apiVersion first, so an object's members are not
// scanned twice (the packer scans them next).
func JSONKind(data []byte) (apiVersion, kind string, hasItems bool, err error) {
	var sawVersion, sawKind bool
	_, err = eachMember(data, func(key, _, val []byte) error {
		switch string(key) {
		case "apiVersion":
			apiVersion, _ = jsonString(val)
			sawVersion = true
		case "kind":
			kind, _ = jsonString(val)
			sawKind = true
		case "items":
			hasItems = true
		}
		if sawVersion && sawKind && !strings.HasSuffix(kind, "List") {
			return errDone
		}
		return nil
	})
	if errors.Is(err, errDone) {
		err = nil
	}
	return apiVersion, kind, hasItems, err
}

// WatchEventParts splits a watch event's JSON ({"type": ..., "object":
// ...}) into its type and its object's JSON, a slice of data, without
// decoding the object.
func WatchEventParts(data []byte) (eventType string, object []byte, err error) {
	isObj, err := eachMember(data, func(key, _, val []byte) error {
		switch string(key) {
		case "type":
			s, ok := jsonString(val)
			if !ok {
				return fmt.Errorf("watch event type %.20q is not a string", val)
			}
			eventType = s
		case "object":
			object = val
		}
		return nil
	})
	if err == nil && !isObj {
		err = fmt.Errorf("watch event %.20q is not a JSON object", data)
	}
	return eventType, object, err
}
