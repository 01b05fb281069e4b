// Package suggest finds the known word a misspelt one was meant to be,
// for errors that say "did you mean".
package suggest

import "strings"

// Nearest is the candidate nearest to s (by edit distance, case aside),
// when it is near enough to be a typo of it, or "". Of two as near, the
// first in candidates wins.
func Nearest(s string, candidates []string) string {
	best, dist := "", len(s)/2+2
	for _, c := range candidates {
		if d := levenshtein(strings.ToLower(s), strings.ToLower(c)); d < dist {
			best, dist = c, d
		}
	}
	return best
}

// levenshtein is the edit distance between a and b.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
