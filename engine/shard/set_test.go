package shard

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// setOf builds a Set from bucket numbers.
func setOf(buckets ...int) Set {
	var s Set
	for _, b := range buckets {
		s = s.Add(b)
	}
	return s
}

func TestSetOps(t *testing.T) {
	a := setOf(0, 1, 2, 40)
	b := setOf(2, 3, 63)
	tests := []struct {
		name string
		got  Set
		want []int
	}{
		{"union", a.Union(b), []int{0, 1, 2, 3, 40, 63}},
		{"minus", a.Minus(b), []int{0, 1, 40}},
		{"add present", a.Add(40), []int{0, 1, 2, 40}},
		{"add 63", a.Add(63), []int{0, 1, 2, 40, 63}},
		{"remove", a.Remove(0), []int{1, 2, 40}},
		{"remove absent", a.Remove(5), []int{0, 1, 2, 40}},
		{"empty", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got.Buckets()); diff != "" {
				t.Errorf("Buckets() (-want +got):\n%s", diff)
			}
			if got := tt.got.Len(); got != len(tt.want) {
				t.Errorf("Len() = %d, want %d", got, len(tt.want))
			}
			for b := -1; b <= Buckets; b++ {
				want := false
				for _, w := range tt.want {
					want = want || w == b
				}
				if got := tt.got.Has(b); got != want {
					t.Errorf("Has(%d) = %v, want %v", b, got, want)
				}
			}
		})
	}
	if got := All().Len(); got != Buckets {
		t.Errorf("All().Len() = %d, want %d", got, Buckets)
	}
}

func TestSetAddOutOfRangePanics(t *testing.T) {
	for _, b := range []int{-1, Buckets, 100} {
		t.Run(strconv.Itoa(b), func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Add(%d) did not panic", b)
				}
			}()
			Set(0).Add(b)
		})
	}
}

func TestSetString(t *testing.T) {
	tests := []struct {
		name string
		set  Set
		want string
	}{
		{"empty", 0, ""},
		{"zero", setOf(0), "0"},
		{"last", setOf(63), "63"},
		{"all", All(), "0-63"},
		{"runs", setOf(0, 1, 2, 3, 7, 9, 10), "0-3,7,9-10"},
		{"pair", setOf(62, 63), "62-63"},
		{"no wrap", setOf(63, 0), "0,63"},
		{"all but one", All().Remove(31), "0-30,32-63"},
		{"alternate", setOf(1, 3, 5), "1,3,5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.set.String()
			if got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			back, err := ParseSet(got)
			if err != nil {
				t.Fatalf("ParseSet(%q): %v", got, err)
			}
			if back != tt.set {
				t.Errorf("ParseSet(%q) = %s, want %s", got, back, tt.set)
			}
		})
	}
}

func TestParseSet(t *testing.T) {
	tests := []struct {
		text    string
		want    Set
		wantErr string // a part of the error; "" for none
	}{
		{text: "", want: 0},
		{text: "  ", want: 0},
		{text: "63", want: setOf(63)},
		{text: "0-63", want: All()},
		{text: "5-5", want: setOf(5)},
		{text: "9-10, 0-1", want: setOf(0, 1, 9, 10)},
		{text: "64", wantErr: `part "64": bucket 64 is out of range 0-63`},
		{text: "0-64", wantErr: `part "0-64": bucket 64 is out of range`},
		{text: "3-1", wantErr: `part "3-1": range 3-1 is reversed`},
		{text: "1,,2", wantErr: `part "": empty part`},
		{text: "1,", wantErr: `part "": empty part`},
		{text: "-1", wantErr: `part "-1": "" is not a bucket number`},
		{text: "a", wantErr: `part "a": "a" is not a bucket number`},
		{text: "+1", wantErr: `"+1" is not a bucket number`},
		{text: "1-2-3", wantErr: `"2-3" is not a bucket number`},
		{text: "0-3,2", wantErr: `part "2": bucket 2 named twice`},
		{text: "99999999999999999999", wantErr: `value out of range`},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := ParseSet(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSet(%q) error = %v, want one containing %q", tt.text, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSet(%q): %v", tt.text, err)
			}
			if got != tt.want {
				t.Errorf("ParseSet(%q) = %s, want %s", tt.text, got, tt.want)
			}
		})
	}
}

func TestSetRuns(t *testing.T) {
	tests := []struct {
		set  Set
		want []run
	}{
		{0, nil},
		{All(), []run{{0, 63}}},
		{setOf(0, 63), []run{{0, 0}, {63, 63}}},
		{setOf(2, 3, 4, 9), []run{{2, 4}, {9, 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.set.String(), func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.set.runs(), cmp.AllowUnexported(run{})); diff != "" {
				t.Errorf("runs() (-want +got):\n%s", diff)
			}
		})
	}
}
