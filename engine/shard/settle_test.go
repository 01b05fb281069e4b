package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// maxRounds is how many rounds of Plan a table may take to settle. In
// turn, two: in the first every member over its quota releases the excess
// and the rest claim what is free when their turn comes, leaving exactly
// the deficits free, which the second round fills. At once, n+1: after
// the first round no member is over its quota, and from then on the first
// member in the round's order that is short gets all it claims, since
// nobody writes before it and what is free covers every deficit.
func maxRounds(m mode, live []string) int {
	if m == inTurn {
		return 2
	}
	return len(liveMembers(live)) + 1
}

func TestPlanSettles(t *testing.T) {
	tests := []struct {
		name   string
		before []string // nil: an empty table
		after  []string
	}{
		{"1 from empty", nil, names(1)},
		{"3 from empty", nil, names(3)},
		{"70 from empty, 6 without a bucket", nil, names(70)},
		{"3 to 5", names(3), names(5)},
		{"5 to 2", names(5), []string{"loom-1", "loom-3"}},
		{"2 to 1", names(2), []string{"loom-1"}},
		{"1 to 3", []string{"loom-1"}, names(3)},
		{"a member whose ID sorts first joins", []string{"b", "c"}, []string{"a", "b", "c"}},
		{"20 to 21, the new one sorts first", names(20), append([]string{"a"}, names(20)...)},
		{"one dies, two join", names(4), []string{"loom-0", "loom-1", "loom-3", "loom-4", "loom-5"}},
		{"all replaced", names(3), []string{"x", "y", "z"}},
	}
	orders := map[string]func([]string) func(int) []string{"sorted": sorted, "reversed": reversed}
	for _, tt := range tests {
		for _, m := range []mode{inTurn, atOnce} {
			for orderName, order := range orders {
				t.Run(fmt.Sprintf("%s/%s/%s", tt.name, m, orderName), func(t *testing.T) {
					var start Table
					if tt.before != nil {
						start, _ = settle(t, start, tt.before, inTurn, sorted(tt.before), 2)
						checkBalanced(t, start, tt.before)
					}
					end, _ := settle(t, start, tt.after, m, order(tt.after), maxRounds(m, tt.after))
					checkBalanced(t, end, tt.after)
					checkMoves(t, start, end, tt.after)
				})
			}
		}
	}
}

// checkMoves checks that going from start to end moved no bucket that
// balance did not require, and the scenario bounds that follow: when
// nobody died, what moved is what the new members hold plus at most one
// bucket per member for quota shifts; when nobody joined, exactly the
// free buckets and those of members that died moved.
func checkMoves(t *testing.T, start, end Table, live []string) {
	t.Helper()
	members := liveMembers(live)
	var dead, newHold Set
	joined, died := false, false
	for b, m := range start {
		if _, isLive := slices.BinarySearch(members, m); m == "" || !isLive {
			dead = dead.Add(b)
			died = died || m != ""
		}
	}
	for _, m := range members {
		if start.Of(m) == 0 {
			joined = true
			newHold = newHold.Union(end.Of(m))
		}
	}
	got := moved(start, end)
	if want := fewestMoves(start, live); got.Len() != want {
		t.Errorf("%d buckets moved (%s), want the fewest balance needs: %d", got.Len(), got, want)
	}
	if dead.Minus(got) != 0 {
		t.Errorf("buckets %s of dead members or free did not move", dead.Minus(got))
	}
	if !died && got.Len() > newHold.Len()+len(members) {
		t.Errorf("%d buckets moved, want at most the %d the new members hold plus %d", got.Len(), newHold.Len(), len(members))
	}
	if !joined && got != dead {
		t.Errorf("buckets %s moved, want only those of the dead members or free: %s", got, dead)
	}
}

// TestPlanProperties runs Plan over random tables and live sets: every
// decision keeps Plan's rules (checkRules, also for members that are not
// live), and the table settles, balanced, within maxRounds, moving the
// fewest buckets.
func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(64, 5866))
	pool := []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}
	for i := range 3000 {
		tab := randomTable(rng, pool)
		var live []string
		for _, m := range pool {
			if rng.IntN(2) == 0 {
				live = append(live, m)
			}
		}
		if len(live) == 0 {
			live = append(live, pool[rng.IntN(len(pool))])
		}
		if rng.IntN(4) == 0 {
			live = append(live, "new") // holds nothing yet
		}
		members := liveMembers(live)
		for _, self := range append(slices.Clone(pool), "new", "") {
			claim, release := Plan(tab, self, live, holders(tab))
			if self == "" {
				if claim != 0 || release != 0 {
					t.Fatalf("case %d: Plan for \"\" = %s/%s, want nothing", i, claim, release)
				}
				continue
			}
			if err := checkRules(tab, self, members, claim, release); err != nil {
				t.Fatalf("case %d: %s on %s with live %q: %v", i, self, tab.Encode(), live, err)
			}
		}
		m := mode(i % 2)
		order := func(int) []string {
			o := slices.Clone(members)
			rng.Shuffle(len(o), func(a, b int) { o[a], o[b] = o[b], o[a] })
			return o
		}
		end, _ := settle(t, tab, live, m, order, maxRounds(m, live))
		checkBalanced(t, end, live)
		if got, want := moved(tab, end).Len(), fewestMoves(tab, live); got != want {
			t.Fatalf("case %d: %d buckets moved from %s to %s with live %q, want %d", i, got, tab.Encode(), end.Encode(), live, want)
		}
	}
}

// randomTable returns a table of random runs: each run of 1 to 12 buckets
// is free or held by a member of pool.
func randomTable(rng *rand.Rand, pool []string) Table {
	var tab Table
	for b := 0; b < Buckets; {
		holder := ""
		if k := rng.IntN(len(pool) + 1); k < len(pool) {
			holder = pool[k]
		}
		for end := min(b+1+rng.IntN(12), Buckets); b < end; b++ {
			tab[b] = holder
		}
	}
	return tab
}

// TestPlanFewRanges checks how many ranges (runs) each member's selector
// has once the table settles, over 200 sets of random member IDs:
//
//   - From an empty table, one: each member claims its home, the range it
//     would hold in ID order, and nothing else is free.
//   - From 3 settled members to 5, at most 4. The old members held one
//     range each and release whole runs or one end, never splitting a run,
//     so they keep one; what they free is at most 3 blocks. A new member
//     grows a run from where it starts until the block or its quota runs
//     out, so it ends with at most 3 runs and leaves at most 4 pieces for
//     the other.
func TestPlanFewRanges(t *testing.T) {
	tests := []struct {
		name          string
		before, after int
		maxRuns       int
	}{
		{"3 from empty", 0, 3, 1},
		{"8 from empty", 0, 8, 1},
		{"3 to 5", 3, 5, 4},
	}
	for _, tt := range tests {
		for _, m := range []mode{inTurn, atOnce} {
			t.Run(fmt.Sprintf("%s/%s", tt.name, m), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3, 5))
				worst := 0
				for range 200 {
					ids := make([]string, tt.after)
					for i := range ids {
						ids[i] = fmt.Sprintf("loom-%08x", rng.Uint32())
					}
					var tab Table
					if tt.before > 0 {
						tab, _ = settle(t, tab, ids[:tt.before], inTurn, sorted(ids[:tt.before]), 2)
					}
					tab, _ = settle(t, tab, ids, m, sorted(ids), maxRounds(m, ids))
					for _, id := range ids {
						worst = max(worst, len(tab.Of(id).runs()))
						if n := len(tab.Of(id).runs()); n > tt.maxRuns {
							t.Errorf("%s holds %s: %d ranges, want at most %d (table %s)", id, tab.Of(id), n, tt.maxRuns, tab.Encode())
						}
					}
				}
				t.Logf("at most %d ranges per member", worst)
			})
		}
	}
}
