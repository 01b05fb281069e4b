package shard

import (
	"fmt"
	"slices"
	"testing"
)

// mode says how a simulated round runs the members' Plans.
type mode int

const (
	// inTurn: each member plans on the table the one before wrote, as
	// members whose compare-and-swap writes never overlap.
	inTurn mode = iota
	// atOnce: every member plans on the table as the round began, then
	// the writes land one by one; a claim succeeds only if its bucket is
	// still claimable when it lands, as a compare-and-swap would ensure.
	atOnce
)

func (m mode) String() string { return [...]string{"in turn", "at once"}[m] }

// settle runs rounds of Plan over the live members, in the order order
// gives for each round, until a round changes nothing. It checks Plan's
// rules on every decision and fails the test if the table has not settled
// after maxRounds. It returns the final table and the number of rounds
// that changed it.
func settle(t *testing.T, tab Table, live []string, m mode, order func(round int) []string, maxRounds int) (Table, int) {
	t.Helper()
	members := liveMembers(live)
	for round := 0; round <= maxRounds; round++ {
		start := tab
		for _, self := range order(round) {
			view := tab
			if m == atOnce {
				view = start
			}
			claim, release := Plan(view, self, live, holders(view)) // every member not live is gone
			if err := checkRules(view, self, members, claim, release); err != nil {
				t.Fatalf("round %d, %s on %s: %v", round, self, view.Encode(), err)
			}
			tab = tab.Apply(self, 0, release)
			for _, b := range claim.Buckets() {
				if _, isLive := slices.BinarySearch(members, tab[b]); tab[b] == "" || !isLive {
					tab[b] = self
				}
			}
		}
		if tab == start {
			return tab, round
		}
	}
	t.Fatalf("not settled after %d rounds: %s", maxRounds, tab.Encode())
	return tab, maxRounds
}

// checkRules checks one Plan decision against the rules Plan documents,
// given the sorted live members.
func checkRules(view Table, self string, members []string, claim, release Set) error {
	held := view.Of(self)
	_, isLive := slices.BinarySearch(members, self)
	if !isLive {
		if claim != 0 || release != held {
			return fmt.Errorf("not live: claim %q release %q, want release of all it holds, %q", claim, release, held)
		}
		return nil
	}
	canClaim := claimable(view, members, holders(view))
	switch {
	case claim.Minus(canClaim) != 0:
		return fmt.Errorf("claims %q, held by live members", claim.Minus(canClaim))
	case release.Minus(held) != 0:
		return fmt.Errorf("releases %q, which it does not hold", release.Minus(held))
	case claim != 0 && release != 0:
		return fmt.Errorf("claims %q and releases %q at once", claim, release)
	}
	quota := Quota(self, members)
	after := held.Union(claim).Minus(release)
	want := min(quota, held.Len()+canClaim.Len())
	if held.Len() > quota {
		want = quota
	}
	if after.Len() != want {
		return fmt.Errorf("holds %d after the plan, want %d (held %d, quota %d, claimable %d)",
			after.Len(), want, held.Len(), quota, canClaim.Len())
	}
	if release != 0 && len(after.runs()) > len(held.runs()) {
		return fmt.Errorf("releasing %q splits a run of %q", release, held)
	}
	return nil
}

// holders returns the sorted members t names: passed to Plan as gone, it
// makes every member not live gone, as the runtime does once it fenced
// them.
func holders(t Table) []string {
	var out []string
	for _, m := range t {
		if m != "" {
			out = append(out, m)
		}
	}
	return liveMembers(out)
}

// sorted is the order of a round where members act in ID order.
func sorted(live []string) func(int) []string {
	members := liveMembers(live)
	return func(int) []string { return members }
}

// reversed is the order of a round where members act in reverse ID order.
func reversed(live []string) func(int) []string {
	members := slices.Clone(liveMembers(live))
	slices.Reverse(members)
	return func(int) []string { return members }
}

// checkBalanced fails the test unless every bucket is held by a live
// member and each live member holds exactly its quota.
func checkBalanced(t *testing.T, tab Table, live []string) {
	t.Helper()
	total := 0
	for _, m := range liveMembers(live) {
		if got, want := tab.Of(m).Len(), Quota(m, live); got != want {
			t.Errorf("%s holds %d buckets (%s), want its quota %d", m, got, tab.Of(m), want)
		}
		total += tab.Of(m).Len()
	}
	if total != Buckets {
		t.Errorf("live members hold %d buckets, want all %d: %s", total, Buckets, tab.Encode())
	}
}

// moved returns the buckets whose holder differs between before and after.
func moved(before, after Table) Set {
	var s Set
	for b := range before {
		if before[b] != after[b] {
			s = s.Add(b)
		}
	}
	return s
}

// fewestMoves is the least number of buckets any balanced table for live
// must move from before: each surviving member can keep at most
// min(what it held, its quota); every other bucket moves.
func fewestMoves(before Table, live []string) int {
	kept := 0
	for _, m := range liveMembers(live) {
		kept += min(before.Of(m).Len(), Quota(m, live))
	}
	return Buckets - kept
}
