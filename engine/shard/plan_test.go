package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestQuota(t *testing.T) {
	tests := []struct {
		live []string
		want []int // by sorted position
	}{
		{[]string{"a"}, []int{64}},
		{[]string{"b", "a", "c"}, []int{22, 21, 21}},
		{[]string{"e", "d", "c", "b", "a"}, []int{13, 13, 13, 13, 12}},
		{[]string{"a", "a", "", "b"}, []int{32, 32}}, // repeats and "" ignored
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.live), func(t *testing.T) {
			var got []int
			for _, m := range liveMembers(tt.live) {
				got = append(got, Quota(m, tt.live))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("quotas = %v, want %v", got, tt.want)
			}
		})
	}
	if got := Quota("z", []string{"a"}); got != 0 {
		t.Errorf("Quota of a member not live = %d, want 0", got)
	}
	for n := 1; n <= 70; n++ {
		live := make([]string, n)
		sum := 0
		for i := range live {
			live[i] = fmt.Sprintf("m%03d", i)
		}
		for _, m := range live {
			sum += Quota(m, live)
		}
		if sum != Buckets {
			t.Errorf("%d members: quotas sum to %d, want %d", n, sum, Buckets)
		}
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		sets map[string]string // the table
		self string
		live []string
		gone []string
		// oneOf lists the acceptable (claim, release) pairs as Set.String
		// texts; where the rendezvous score picks, more than one.
		oneOf [][2]string
	}{
		{name: "not live releases all", sets: map[string]string{"a": "0-40", "b": "41-63"},
			self: "b", live: []string{"a"}, oneOf: [][2]string{{"", "41-63"}}},
		{name: "empty ID does nothing", sets: map[string]string{"a": "0-3"},
			self: "", live: []string{"a", ""}, oneOf: [][2]string{{"", ""}}},
		{name: "at quota", sets: map[string]string{"a": "0-31", "b": "32-63"},
			self: "a", live: []string{"a", "b"}, oneOf: [][2]string{{"", ""}}},
		{name: "over quota releases one end", sets: map[string]string{"a": "0-63"},
			self: "a", live: []string{"a", "b"}, oneOf: [][2]string{{"", "0-31"}, {"", "32-63"}}},
		{name: "shortest run goes whole", sets: map[string]string{"a": "0-1,10-41"},
			self: "a", live: []string{"a", "b"}, oneOf: [][2]string{{"", "0-1"}}},
		{name: "shortest run, then an end of the next", sets: map[string]string{"a": "0-1,10-40"},
			self: "a", live: []string{"c", "b", "a"}, oneOf: [][2]string{{"", "0-1,10-18"}, {"", "0-1,32-40"}}},
		{name: "one to go, from an end of the shortest run", sets: map[string]string{"a": "0-1,10-40"},
			self: "a", live: []string{"a", "b"}, oneOf: [][2]string{{"", "0"}, {"", "1"}}},
		{name: "takes a gone member's buckets", sets: map[string]string{"a": "0-31", "dead": "32-63"},
			self: "b", live: []string{"a", "b"}, gone: []string{"dead"}, oneOf: [][2]string{{"32-63", ""}}},
		{name: "not a member neither live nor gone (not fenced yet)", sets: map[string]string{"a": "0-31", "dead": "32-63"},
			self: "b", live: []string{"a", "b"}, oneOf: [][2]string{{"", ""}}},
		{name: "free buckets, but not an unfenced member's", sets: map[string]string{"a": "0-15", "dead": "32-63"},
			self: "b", live: []string{"a", "b"}, oneOf: [][2]string{{"16-31", ""}}},
		{name: "gone and live: live wins", sets: map[string]string{"a": "0-63"},
			self: "b", live: []string{"a", "b"}, gone: []string{"a"}, oneOf: [][2]string{{"", ""}}},
		{name: "never a live member's", sets: map[string]string{"a": "0-63"},
			self: "b", live: []string{"a", "b", "c"}, oneOf: [][2]string{{"", ""}}},
		{name: "claims what there is", sets: map[string]string{"a": "10", "b": "20-62", "c": "63"},
			self: "a", live: []string{"a", "b", "c"}, oneOf: [][2]string{{"0-9,11-19", ""}}},
		{name: "next to its own, not elsewhere (right)", sets: map[string]string{"a": "0-20", "b": "22-39,41-42", "c": "43-63"},
			self: "a", live: []string{"a", "b", "c"}, oneOf: [][2]string{{"21", ""}}},
		{name: "next to its own, not elsewhere (left)", sets: map[string]string{"a": "1-21", "b": "22-39,41-42", "c": "43-63"},
			self: "a", live: []string{"a", "b", "c"}, oneOf: [][2]string{{"0", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := tableOf(t, tt.sets)
			claim, release := Plan(tab, tt.self, tt.live, tt.gone)
			got := [2]string{claim.String(), release.String()}
			if !slices.Contains(tt.oneOf, got) {
				t.Errorf("Plan(%s, %q) = claim %q release %q, want one of %q", tab.Encode(), tt.self, got[0], got[1], tt.oneOf)
			}
		})
	}
}

// TestPlanAdjacentClaims checks that claims extend the member's run: from
// one held bucket and nothing else taken, the claims and the bucket are
// one run.
func TestPlanAdjacentClaims(t *testing.T) {
	for _, held := range []int{0, 10, 31, 63} {
		t.Run(fmt.Sprint(held), func(t *testing.T) {
			var tab Table
			tab[held] = "a"
			claim, _ := Plan(tab, "a", []string{"a", "b", "c", "d"}, nil)
			if got := tab.Of("a").Union(claim); got.Len() != 16 || len(got.runs()) != 1 {
				t.Errorf("a holds %s after claiming %s, want one run of 16", got, claim)
			}
		})
	}
}

// TestPlanStartsInHomes checks that members starting at once from an
// empty table, each planning on that same empty table, claim disjoint
// single ranges that cover every bucket: no compare-and-swap is lost.
func TestPlanStartsInHomes(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8, 64} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			live := names(n)
			var all Set
			for _, m := range live {
				claim, release := Plan(Table{}, m, live, nil)
				if release != 0 || claim.Len() != Quota(m, live) || len(claim.runs()) != 1 {
					t.Errorf("%s claims %q, releases %q; want one range of its quota %d", m, claim, release, Quota(m, live))
				}
				if claim&all != 0 {
					t.Errorf("%s claims %q, already claimed by another", m, claim&all)
				}
				all = all.Union(claim)
			}
			if all != All() {
				t.Errorf("the members claim %s, want all", all)
			}
		})
	}
}

// TestPickClaimSpreads checks the rendezvous score where neither
// adjacency nor home decides: two members picking one bucket from the same
// 16 scattered free buckets pick the same one about as often as chance
// (1 in 16), not always, as "lowest bucket first" would, nor 2.2 to 2.4
// times chance, as FNV-1a without mix did for all three kinds of IDs.
func TestPickClaimSpreads(t *testing.T) {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	tests := []struct {
		name string
		ids  func(rng *rand.Rand, i int) (string, string)
	}{
		{"ordinals", func(_ *rand.Rand, i int) (string, string) {
			return fmt.Sprintf("loom-%d", i), fmt.Sprintf("loom-%d", i+1)
		}},
		{"first byte differs", func(_ *rand.Rand, i int) (string, string) {
			return fmt.Sprintf("p-%d", i), fmt.Sprintf("q-%d", i)
		}},
		{"pod names", func(rng *rand.Rand, _ int) (string, string) {
			pod := func() string {
				b := make([]byte, 5)
				for i := range b {
					b[i] = letters[rng.IntN(len(letters))]
				}
				return "loom-6f7d9c4b8-" + string(b)
			}
			return pod(), pod()
		}},
	}
	const trials = 2000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			same := 0
			for i := range trials {
				var free Set
				for free.Len() < 16 {
					free = free.Add(2 * rng.IntN(Buckets/2)) // even buckets: none adjacent
				}
				a, b := tt.ids(rng, i)
				p := pickClaim(0, free, 0, 1, scores(a))
				if p.Len() != 1 || p.Minus(free) != 0 {
					t.Fatalf("pickClaim from %s = %s, want one of them", free, p)
				}
				if p == pickClaim(0, free, 0, 1, scores(b)) {
					same++
				}
			}
			// Chance is 125 of 2000 (standard deviation 11); allow 1.5 times.
			if limit := trials * 3 / 32; same > limit {
				t.Errorf("two members picked the same bucket %d times in %d, want at most %d (chance %d)", same, trials, limit, trials/16)
			}
		})
	}
}

func TestPlanDeterministic(t *testing.T) {
	tab := tableOf(t, map[string]string{"a": "0-40", "gone": "41-50"})
	live := []string{"c", "a", "b"}
	claim, release := Plan(tab, "b", live, []string{"gone"})
	for _, shuffled := range [][]string{{"a", "b", "c"}, {"b", "c", "a", "a", ""}} {
		c, r := Plan(tab, "b", shuffled, []string{"", "gone", "gone"})
		if c != claim || r != release {
			t.Errorf("Plan with live %q = %s/%s, with %q = %s/%s", live, claim, release, shuffled, c, r)
		}
	}
}

// names returns n member IDs loom-0, loom-1, ...
func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("loom-%d", i)
	}
	return out
}
