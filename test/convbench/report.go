package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// result is what one run measured.
type result struct {
	// storage and webhook are the timed lists of every parent: in the
	// storage version, and in the version the webhook converts to.
	storage, webhook []time.Duration
	// storageVersion and webhookVersion name the two versions.
	storageVersion, webhookVersion string
	// reviews are the latencies of the ConversionReviews sent to /convert.
	reviews []time.Duration
	// listReviews is how many ConversionReviews Loom served during the
	// timed lists (its loom_conversion_reviews_total).
	listReviews float64
	// listCPU is the CPU time Loom used over the timed rounds (the
	// touches' and the lists').
	listCPU time.Duration
	// parents is how many parents each list returned.
	parents int
	// loomRSS is Loom's peak RSS (VmHWM) at the end, in KiB; 0 unknown.
	loomRSS int64
}

// quantile returns the q-quantile of ds (nearest rank); 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// ratio is the median list through the webhook ÷ the median list in the
// storage version; 0 when either is missing.
func (r *result) ratio() float64 {
	s, w := quantile(r.storage, 0.5), quantile(r.webhook, 0.5)
	if s == 0 || w == 0 {
		return 0
	}
	return float64(w) / float64(s)
}

// pass reports whether the ratio meets the goal.
func (r *result) pass(o options) bool {
	x := r.ratio()
	return x > 0 && x <= o.targetRatio
}

// write prints the report.
func (r *result) write(w io.Writer, o options) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintf(w, "conversion webhook: %d parents of the set %s (a copy, its own group), bin/loom run serving the webhook\n", r.parents, o.set)
	fmt.Fprintf(w, "lists of every parent, %d each, alternating (p50 / p90 / max):\n", o.rounds)
	fmt.Fprintf(w, "  %-8s %-28s %s / %s / %s\n", r.storageVersion, "(storage: no conversion)", ms(quantile(r.storage, 0.5)), ms(quantile(r.storage, 0.9)), ms(quantile(r.storage, 1)))
	fmt.Fprintf(w, "  %-8s %-28s %s / %s / %s\n", r.webhookVersion, "(through the webhook)", ms(quantile(r.webhook, 0.5)), ms(quantile(r.webhook, 0.9)), ms(quantile(r.webhook, 1)))
	fmt.Fprintf(w, "  Loom served %g ConversionReviews during the %d lists through the webhook (the API server sends one per parent), with %.2f s of CPU\n", r.listReviews, o.rounds, r.listCPU.Seconds())
	fmt.Fprintf(w, "one ConversionReview of %d parents (%s to %s) sent to /convert over HTTPS, %d times: p50 %s, p99 %s, max %s\n",
		o.reviewSize, r.storageVersion, r.webhookVersion, len(r.reviews), ms(quantile(r.reviews, 0.5)), ms(quantile(r.reviews, 0.99)), ms(quantile(r.reviews, 1)))
	if r.loomRSS > 0 {
		fmt.Fprintf(w, "Loom's peak RSS (VmHWM): %.1f MiB\n", float64(r.loomRSS)/1024)
	}
	verdict := "MISS"
	if r.pass(o) {
		verdict = "PASS"
	}
	fmt.Fprintf(w, "list through the webhook ÷ list in the storage version (p50): %.3f (goal ≤ %g) %s\n", r.ratio(), o.targetRatio, verdict)
}
