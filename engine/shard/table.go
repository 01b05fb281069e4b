package shard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Table says which member holds each bucket; "" means the bucket is free.
// The runtime stores it, encoded, on a Lease and changes it only by
// compare-and-swap.
type Table [Buckets]string

// Of returns the buckets member holds. Of("") returns the free buckets.
func (t Table) Of(member string) Set {
	var s Set
	for b, m := range t {
		if m == member {
			s = s.Add(b)
		}
	}
	return s
}

// Apply returns t with claim's buckets held by member and release's
// buckets free. It checks nothing: Plan's rules and the runtime's
// compare-and-swap make the change safe.
func (t Table) Apply(member string, claim, release Set) Table {
	for _, b := range claim.Buckets() {
		t[b] = member
	}
	for _, b := range release.Buckets() {
		t[b] = ""
	}
	return t
}

// Encode returns t as a JSON object from member to the Set.String of its
// buckets, with sorted keys, such as {"loom-0":"0-21","loom-1":"22-42"}.
// Free buckets are left out, so an empty table is {}. DecodeTable reads it
// back.
func (t Table) Encode() string {
	held := map[string]Set{}
	for b, m := range t {
		if m != "" {
			held[m] = held[m].Add(b)
		}
	}
	sets := make(map[string]string, len(held))
	for m, s := range held {
		sets[m] = s.String()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sets); err != nil {
		// A map of strings to strings always encodes.
		panic(fmt.Sprintf("shard: encode table: %v", err))
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// DecodeTable reads Encode's form. "" (no table yet) and "{}" are the empty
// table. It refuses anything but one JSON object of strings, an empty or
// repeated member, a set ParseSet refuses, and a bucket held by two
// members; the error names which.
func DecodeTable(text string) (Table, error) {
	var t Table
	if strings.TrimSpace(text) == "" {
		return t, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	if err := expectDelim(dec, '{'); err != nil {
		return Table{}, fmt.Errorf("decode shard table: %w", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		member, sets, err := decodeEntry(dec)
		if err != nil {
			return Table{}, fmt.Errorf("decode shard table: %w", err)
		}
		if seen[member] {
			return Table{}, fmt.Errorf("decode shard table: member %q named twice", member)
		}
		seen[member] = true
		for _, b := range sets.Buckets() {
			if t[b] != "" {
				return Table{}, fmt.Errorf("decode shard table: bucket %d held by both %q and %q", b, t[b], member)
			}
			t[b] = member
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return Table{}, fmt.Errorf("decode shard table: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Table{}, fmt.Errorf("decode shard table: text after the object")
	}
	return t, nil
}

// decodeEntry reads one "member": "set" pair of the table's object.
func decodeEntry(dec *json.Decoder) (string, Set, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", 0, err
	}
	member, ok := tok.(string)
	if !ok || member == "" {
		return "", 0, fmt.Errorf("member %v: want a non-empty string", tok)
	}
	tok, err = dec.Token()
	if err != nil {
		return "", 0, fmt.Errorf("member %q: %w", member, err)
	}
	text, ok := tok.(string)
	if !ok {
		return "", 0, fmt.Errorf("member %q: buckets %v: want a string such as \"0-3,7\"", member, tok)
	}
	s, err := ParseSet(text)
	if err != nil {
		return "", 0, fmt.Errorf("member %q: %w", member, err)
	}
	return member, s, nil
}

// expectDelim reads the next token and refuses anything but want.
func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}
