package shard

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	serversharding "k8s.io/apiserver/pkg/sharding"
)

// randomUIDs returns n UUID-shaped UIDs from a fixed seed.
func randomUIDs(n int) []types.UID {
	rng := rand.New(rand.NewPCG(5866, 1))
	uids := make([]types.UID, n)
	for i := range uids {
		uids[i] = types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x",
			rng.Uint32(), rng.Uint32N(1<<16), rng.Uint32N(1<<16), rng.Uint32N(1<<16), rng.Uint64N(1<<48)))
	}
	return uids
}

// selectorSets are the sets the selector tests check, beside random ones.
func selectorSets() map[string]Set {
	sets := map[string]Set{
		"all":         All(),
		"first":       setOf(0),
		"last":        setOf(63),
		"ends":        setOf(0, 63),
		"runs":        setOf(0, 1, 2, 3, 7, 9, 10),
		"all but one": All().Remove(31),
		"upper half":  All().Minus(Set(1<<32 - 1)),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		sets["random "+strconv.Itoa(i)] = Set(rng.Uint64())
	}
	return sets
}

func TestBucketAgreesWithHashField(t *testing.T) {
	seen := Set(0)
	for _, uid := range randomUIDs(5000) {
		hash, err := strconv.ParseUint(sharding.HashField(string(uid)), 16, 64)
		if err != nil {
			t.Fatalf("HashField(%q): %v", uid, err)
		}
		if got, want := Bucket(uid), int(hash>>58); got != want {
			t.Errorf("Bucket(%q) = %d, want %d (hash %016x)", uid, got, want, hash)
		}
		seen = seen.Add(Bucket(uid))
	}
	if seen != All() {
		t.Errorf("the UIDs cover buckets %s, want all, so that every bucket is checked", seen)
	}
}

// TestSelectorMatchesAPIMachinery checks that the API server's selector,
// built from Requirements, selects an object exactly when Matches does.
func TestSelectorMatchesAPIMachinery(t *testing.T) {
	uids := randomUIDs(3000)
	for name, s := range selectorSets() {
		t.Run(name, func(t *testing.T) {
			sel := sharding.NewSelector(Requirements(s)...)
			for _, uid := range uids {
				obj := &unstructured.Unstructured{Object: map[string]any{}}
				obj.SetUID(uid)
				got, err := sel.Matches(obj)
				if err != nil {
					t.Fatalf("Matches(%q): %v", uid, err)
				}
				if want := Matches(s, uid); got != want {
					t.Errorf("API server selector %q matches %q (bucket %d) = %v, Matches = %v", sel, uid, Bucket(uid), got, want)
				}
			}
		})
	}
}

// TestSelectorParsesOnServer parses Selector's text with the API server's
// parser and checks it reads back Requirements unchanged.
func TestSelectorParsesOnServer(t *testing.T) {
	for name, s := range selectorSets() {
		t.Run(name, func(t *testing.T) {
			text := Selector(s)
			parsed, err := serversharding.Parse(text)
			if err != nil {
				t.Fatalf("Parse(%q): %v", text, err)
			}
			if diff := cmp.Diff(Requirements(s), parsed.Requirements()); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
			if got, want := len(parsed.Requirements()), len(s.runs()); got != want {
				t.Errorf("%d ranges for %s, want one per run: %d", got, s, want)
			}
		})
	}
}

func TestSelectorText(t *testing.T) {
	tests := []struct {
		name string
		set  Set
		want string
	}{
		{"empty", 0, ""},
		{"all", All(), "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{"last", setOf(63), "shardRange(object.metadata.uid, '0xfc00000000000000', '0x10000000000000000')"},
		{"runs", setOf(0, 1, 5), "shardRange(object.metadata.uid, '0x0000000000000000', '0x0800000000000000')" +
			" || shardRange(object.metadata.uid, '0x1400000000000000', '0x1800000000000000')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Selector(tt.set); got != tt.want {
				t.Errorf("Selector(%s) =\n%s\nwant\n%s", tt.set, got, tt.want)
			}
		})
	}
	// Why the empty set must not be sent: the server refuses "".
	if _, err := serversharding.Parse(Selector(0)); err == nil {
		t.Errorf("the API server parsed the empty set's selector; the doc comment on Selector is wrong")
	}
}

// TestRequirementsBoundaries checks each bucket's range at its edges with
// the API server's comparison (sharding.HexLess), where random UIDs never
// land.
func TestRequirementsBoundaries(t *testing.T) {
	const width = uint64(1) << 58
	for b := range Buckets {
		t.Run(strconv.Itoa(b), func(t *testing.T) {
			reqs := Requirements(setOf(b))
			if len(reqs) != 1 {
				t.Fatalf("Requirements({%d}) = %v, want one range", b, reqs)
			}
			first := uint64(b) * width
			last := first + width - 1
			cases := map[uint64]bool{first: true, last: true, first + width/2: true}
			if b > 0 {
				cases[first-1] = false
			}
			if b < Buckets-1 {
				cases[last+1] = false
			}
			for hash, want := range cases {
				if got := inRange(hash, reqs[0]); got != want {
					t.Errorf("hash %016x in %v = %v, want %v", hash, reqs[0], got, want)
				}
			}
		})
	}
}

// inRange compares as the API server's shard selector does.
func inRange(hash uint64, req sharding.ShardRangeRequirement) bool {
	h := fmt.Sprintf("0x%016x", hash)
	return !sharding.HexLess(h, req.Start) && sharding.HexLess(h, req.End)
}

func TestLabelSelector(t *testing.T) {
	sets := selectorSets()
	sets["empty"] = 0
	for name, s := range sets {
		t.Run(name, func(t *testing.T) {
			text := LabelSelector(s)
			sel, err := labels.Parse(text)
			if err != nil {
				t.Fatalf("labels.Parse(%q): %v", text, err)
			}
			if s == 0 {
				if text != "" || !sel.Empty() {
					t.Errorf("LabelSelector(empty) = %q, want \"\"", text)
				}
				return
			}
			for b := range Buckets {
				child := labels.Set{LabelBucket: strconv.Itoa(b)}
				if got := sel.Matches(child); got != s.Has(b) {
					t.Errorf("%q matches bucket %d = %v, want %v", text, b, got, s.Has(b))
				}
			}
			if sel.Matches(labels.Set{"app": "web"}) {
				t.Errorf("%q matches a child without %s", text, LabelBucket)
			}
		})
	}
	if got, want := LabelSelector(setOf(0, 1, 2)), "loom.dev/shard-bucket in (0,1,2)"; got != want {
		t.Errorf("LabelSelector({0,1,2}) = %q, want %q", got, want)
	}
	if got := LabelSelector(setOf(2, 10)); !strings.HasSuffix(got, "in (10,2)") {
		t.Errorf("LabelSelector({2,10}) = %q, want labels' string order (10,2)", got)
	}
}

func TestBucketLabel(t *testing.T) {
	for _, uid := range randomUIDs(200) {
		value := BucketLabel(uid)
		sel, err := labels.Parse(LabelSelector(setOf(Bucket(uid))))
		if err != nil {
			t.Fatal(err)
		}
		if !sel.Matches(labels.Set{LabelBucket: value}) {
			t.Errorf("BucketLabel(%q) = %q, not selected by its bucket's selector", uid, value)
		}
		if n, err := strconv.Atoi(value); err != nil || n != Bucket(uid) {
			t.Errorf("BucketLabel(%q) = %q, want %d", uid, value, Bucket(uid))
		}
	}
}
