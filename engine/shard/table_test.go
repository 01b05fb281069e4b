package shard

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tableOf builds a Table from member to the Set.String of its buckets.
func tableOf(t *testing.T, sets map[string]string) Table {
	t.Helper()
	var tab Table
	for m, text := range sets {
		s, err := ParseSet(text)
		if err != nil {
			t.Fatal(err)
		}
		tab = tab.Apply(m, s, 0)
	}
	return tab
}

func TestTableEncodeDecode(t *testing.T) {
	tests := []struct {
		name  string
		sets  map[string]string
		wantE string
	}{
		{"empty", nil, `{}`},
		{"one member", map[string]string{"loom-0": "0-63"}, `{"loom-0":"0-63"}`},
		{"sorted, free omitted", map[string]string{"b": "22-42", "a": "0-3,7", "c": "63"},
			`{"a":"0-3,7","b":"22-42","c":"63"}`},
		{"odd IDs", map[string]string{`x"<y>`: "5"}, `{"x\"<y>":"5"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := tableOf(t, tt.sets)
			got := tab.Encode()
			if got != tt.wantE {
				t.Errorf("Encode() = %s, want %s", got, tt.wantE)
			}
			back, err := DecodeTable(got)
			if err != nil {
				t.Fatalf("DecodeTable(%s): %v", got, err)
			}
			if diff := cmp.Diff(tab, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeTable(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    map[string]string
		wantErr string // a part of the error; "" for none
	}{
		{name: "no table yet", text: "", want: nil},
		{name: "empty object", text: " {} ", want: nil},
		{name: "empty set", text: `{"a":"","b":"1-2"}`, want: map[string]string{"b": "1-2"}},
		{name: "spaces", text: "{\n \"a\": \"0-1, 5\"\n}", want: map[string]string{"a": "0-1,5"}},
		{name: "bucket twice", text: `{"a":"0-3","b":"3-5"}`, wantErr: `bucket 3 held by both "a" and "b"`},
		{name: "member twice", text: `{"a":"0","a":"1"}`, wantErr: `member "a" named twice`},
		{name: "empty member", text: `{"":"0"}`, wantErr: `want a non-empty string`},
		{name: "bad set", text: `{"a":"0-x"}`, wantErr: `member "a": parse bucket set "0-x": part "0-x"`},
		{name: "number", text: `{"a":3}`, wantErr: `member "a": buckets 3: want a string`},
		{name: "array value", text: `{"a":["0"]}`, wantErr: `member "a": buckets [: want a string`},
		{name: "array", text: `["a"]`, wantErr: `want "{", got [`},
		{name: "null", text: `null`, wantErr: `want "{", got <nil>`},
		{name: "not JSON", text: `a=0-3`, wantErr: `invalid character`},
		{name: "unterminated", text: `{"a":"0"`, wantErr: `EOF`},
		{name: "trailing", text: `{"a":"0"} {}`, wantErr: `text after the object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeTable(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeTable(%s) error = %v, want one containing %q", tt.text, err, tt.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "decode shard table: ") {
					t.Errorf("error %q does not say what failed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeTable(%s): %v", tt.text, err)
			}
			if diff := cmp.Diff(tableOf(t, tt.want), got); diff != "" {
				t.Errorf("DecodeTable(%s) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestTableOfAndApply(t *testing.T) {
	tab := tableOf(t, map[string]string{"a": "0-3", "b": "10"})
	tab = tab.Apply("a", setOf(4, 5), setOf(0))
	tests := []struct {
		member string
		want   string
	}{
		{"a", "1-5"},
		{"b", "10"},
		{"c", ""},
		{"", "0,6-9,11-63"}, // the free buckets
	}
	for _, tt := range tests {
		t.Run(tt.member, func(t *testing.T) {
			if got := tab.Of(tt.member).String(); got != tt.want {
				t.Errorf("Of(%q) = %q, want %q", tt.member, got, tt.want)
			}
		})
	}
}
