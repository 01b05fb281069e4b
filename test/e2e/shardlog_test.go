//go:build e2e

package e2e

// What the sharding tests read from the log of loom run --sharded
// --log-format json -v=2, and the pure checks over it: a parser, the
// bucket sets of the shard table, and the check that no two processes
// reconciled one parent at the same moment. The tests at the end run
// without a cluster.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// shardBucketCount is how many buckets the parents are hashed into.
const shardBucketCount = 64

// bucketOf is the bucket of a parent: the top 6 bits of the FNV-1a-64 hash
// of its metadata.uid.
func bucketOf(uid string) int {
	h := fnv.New64a()
	h.Write([]byte(uid))
	return int(h.Sum64() >> (64 - 6))
}

// bucketSet is a set of buckets, bucket b being bit b.
type bucketSet uint64

func (s bucketSet) has(b int) bool { return s&(1<<uint(b)) != 0 }
func (s bucketSet) len() int       { return bits.OnesCount64(uint64(s)) }

// String writes the set as the shard table does: "0-20,33".
func (s bucketSet) String() string {
	var parts []string
	for b := 0; b < shardBucketCount; b++ {
		if !s.has(b) {
			continue
		}
		end := b
		for end+1 < shardBucketCount && s.has(end+1) {
			end++
		}
		if end == b {
			parts = append(parts, strconv.Itoa(b))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", b, end))
		}
		b = end
	}
	return strings.Join(parts, ",")
}

// parseBuckets reads a set written as the shard table writes it: ranges
// and single buckets separated by commas, "0-20,33"; "" is the empty set.
func parseBuckets(s string) (bucketSet, error) {
	var set bucketSet
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.Atoi(lo)
		b, errB := strconv.Atoi(hi)
		if errA != nil || errB != nil || a < 0 || b >= shardBucketCount || a > b {
			return 0, fmt.Errorf("bucket set %q: bad part %q", s, part)
		}
		for i := a; i <= b; i++ {
			set |= 1 << uint(i)
		}
	}
	return set, nil
}

// parseShardTable reads the loom.dev/shard-table annotation of a shard
// group's table Lease: a JSON object of member ID to bucket set. It fails
// when two members hold one bucket.
func parseShardTable(annotation string) (map[string]bucketSet, error) {
	var raw map[string]string
	if err := json.Unmarshal([]byte(annotation), &raw); err != nil {
		return nil, fmt.Errorf("shard table %q: %w", annotation, err)
	}
	table := make(map[string]bucketSet, len(raw))
	var seen bucketSet
	for id, s := range raw {
		set, err := parseBuckets(s)
		if err != nil {
			return nil, fmt.Errorf("shard table, member %s: %w", id, err)
		}
		if both := seen & set; both != 0 {
			return nil, fmt.Errorf("shard table %s: member %s holds buckets %s that another member holds too", annotation, id, both)
		}
		seen |= set
		table[id] = set
	}
	return table, nil
}

// reconcileInterval is one "Reconcile interval" line: a reconcile of the
// parent uid, from start to end, by the process proc, which was shard
// member replica.
type reconcileInterval struct {
	proc, replica, uid string
	start, end         time.Time
}

func (iv reconcileInterval) String() string {
	return fmt.Sprintf("%s (%s) %s..%s", iv.proc, iv.replica, iv.start.Format("15:04:05.000000"), iv.end.Format("15:04:05.000000"))
}

// shardWrite is one "Shard write" line: a mutating request for the parent
// uid, logged just before it was sent.
type shardWrite struct {
	uid, method string
	at          time.Time
}

// memberJoin is one "Joined the shard group" line.
type memberJoin struct {
	id string
	at time.Time
}

// bucketMove is one "Shard buckets moved" line, at the time it was logged.
type bucketMove struct {
	id                string
	at                time.Time
	claimed, released bucketSet
}

// shardLog is what one process logged, reduced to the lines the sharding
// tests read.
type shardLog struct {
	proc      string
	intervals []reconcileInterval
	writes    []shardWrite
	// refused are the parents of "Refused a write for a parent this
	// replica does not own" lines.
	refused []string
	joins   []memberJoin
	moves   []bucketMove
	// lapses are when the replica found its own Lease lapsed.
	lapses []time.Time
	// lefts are when it logged "Left the shard group".
	lefts []time.Time
	// childWatches counts the "Watching child kind" lines by resource: a
	// child informer started for that kind (V(2)).
	childWatches map[string]int
}

// lastID is the member ID the process last joined with, or "".
func (l shardLog) lastID() string {
	if len(l.joins) == 0 {
		return ""
	}
	return l.joins[len(l.joins)-1].id
}

// parseShardLog reads a --log-format json log. Lines that are not JSON
// objects (a Go panic, say) are skipped; a sharding line that lacks a key
// the tests need, or has a time that is not RFC 3339, is an error.
func parseShardLog(proc string, r io.Reader) (shardLog, error) {
	l := shardLog{proc: proc}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			continue // a line cut short by SIGKILL
		}
		if err := l.add(m); err != nil {
			return l, fmt.Errorf("log of %s, line %d: %w: %s", proc, n, err, line)
		}
	}
	return l, sc.Err()
}

// add records one log line, if it is one the tests read.
func (l *shardLog) add(m map[string]any) error {
	f := logFields(m)
	switch m["msg"] {
	case "Reconcile interval":
		iv := reconcileInterval{proc: l.proc, replica: f.str("replica"), uid: f.str("uid"), start: f.time("start"), end: f.time("end")}
		if f.err == nil && iv.end.Before(iv.start) {
			f.err = fmt.Errorf("interval ends before it starts")
		}
		l.intervals = append(l.intervals, iv)
	case "Shard write":
		l.writes = append(l.writes, shardWrite{uid: f.str("uid"), method: f.str("method"), at: f.time("at")})
	case "Refused a write for a parent this replica does not own":
		l.refused = append(l.refused, f.str("uid"))
	case "Joined the shard group":
		l.joins = append(l.joins, memberJoin{id: f.str("id"), at: f.time("time")})
	case "Shard buckets moved":
		l.moves = append(l.moves, bucketMove{id: f.str("id"), at: f.time("time"), claimed: f.buckets("claimed"), released: f.buckets("released")})
	case "This replica's shard Lease lapsed; it holds nothing now and joins again under a new ID":
		l.lapses = append(l.lapses, f.time("time"))
	case "Left the shard group":
		l.lefts = append(l.lefts, f.time("time"))
	case "Watching child kind":
		if l.childWatches == nil {
			l.childWatches = map[string]int{}
		}
		l.childWatches[f.str("resource")]++
	}
	return f.err
}

// logFields reads the keys of one line, keeping the first error.
type lineFields struct {
	m   map[string]any
	err error
}

func logFields(m map[string]any) *lineFields { return &lineFields{m: m} }

func (f *lineFields) str(key string) string {
	s, ok := f.m[key].(string)
	if (!ok || s == "") && f.err == nil {
		f.err = fmt.Errorf("no string %q", key)
	}
	return s
}

func (f *lineFields) time(key string) time.Time {
	s := f.str(key)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("%s: %w", key, err)
	}
	return t
}

// buckets reads a bucket set written as "0-20,33" or as a JSON array of
// bucket numbers; a missing key is the empty set.
func (f *lineFields) buckets(key string) bucketSet {
	var set bucketSet
	var err error
	switch v := f.m[key].(type) {
	case nil:
	case string:
		set, err = parseBuckets(v)
	case []any:
		for _, b := range v {
			n, ok := b.(float64)
			if !ok || n < 0 || n >= shardBucketCount {
				err = fmt.Errorf("%s: bad bucket %v", key, b)
				break
			}
			set |= 1 << uint(n)
		}
	default:
		err = fmt.Errorf("%s: a %T, want a bucket set", key, v)
	}
	if err != nil && f.err == nil {
		f.err = err
	}
	return set
}

// overlap is two reconciles of one parent, by two processes, that shared
// a moment.
type overlap struct{ a, b reconcileInterval }

func (o overlap) String() string { return fmt.Sprintf("parent %s: %s and %s", o.a.uid, o.a, o.b) }

// overlaps returns every pair of intervals of one parent from two
// different processes that share a moment. Intervals that only touch
// (one ends when the other starts) do not overlap; two of one process
// are not compared (its workqueue never hands one parent to two workers).
func overlaps(ivs []reconcileInterval) []overlap {
	byUID := map[string][]reconcileInterval{}
	for _, iv := range ivs {
		byUID[iv.uid] = append(byUID[iv.uid], iv)
	}
	var out []overlap
	for _, list := range byUID {
		sort.Slice(list, func(i, j int) bool { return list[i].start.Before(list[j].start) })
		for i, a := range list {
			// Sorted by start: b overlaps a exactly when it starts before a ends.
			for _, b := range list[i+1:] {
				if !b.start.Before(a.end) {
					break
				}
				if b.proc != a.proc {
					out = append(out, overlap{a, b})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].a.start.Before(out[j].a.start) })
	return out
}

// lapseSlack is how long after a reconcile ended its replica may log the
// lapse of its Lease that the reconcile ran into: the member's loop looks
// every half renew interval, or after a renewal that timed out (2 s).
const lapseSlack = 5 * time.Second

// excusedByLapse reports whether iv ran into a lapse of its replica's own
// Lease: the replica logged one after iv started and at most lapseSlack
// after it ended. Other replicas may take the parent over while such a
// reconcile still runs (frozen, or slow), but its writes after the lapse
// are refused (writeProblems checks that none was sent).
func excusedByLapse(iv reconcileInterval, l shardLog) bool {
	for _, at := range l.lapses {
		if at.After(iv.start) && !at.After(iv.end.Add(lapseSlack)) {
			return true
		}
	}
	return false
}

// heldAt is when a process held which buckets, by its own log: each entry
// holds from its time until the next one.
type heldAt struct {
	at   time.Time
	id   string
	held bucketSet
}

// holdings reads, from a process's log, the buckets it held over time
// under the ID it had: a join holds nothing yet, a move of that ID claims
// and releases, a lapse or leaving drops everything.
func holdings(l shardLog) []heldAt {
	type event struct {
		at time.Time
		fn func(h heldAt) heldAt
	}
	var evs []event
	for _, j := range l.joins {
		evs = append(evs, event{j.at, func(heldAt) heldAt { return heldAt{id: j.id} }})
	}
	for _, m := range l.moves {
		evs = append(evs, event{m.at, func(h heldAt) heldAt {
			if m.id == h.id {
				h.held = (h.held | m.claimed) &^ m.released
			}
			return h
		}})
	}
	for _, at := range append(append([]time.Time(nil), l.lapses...), l.lefts...) {
		evs = append(evs, event{at, func(h heldAt) heldAt { h.held = 0; return h }})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	var out []heldAt
	var cur heldAt
	for _, e := range evs {
		cur = e.fn(cur)
		cur.at = e.at
		out = append(out, cur)
	}
	return out
}

// heldWhen is what h says was held at t.
func heldWhen(h []heldAt, t time.Time) heldAt {
	var cur heldAt
	for _, x := range h {
		if x.at.After(t) {
			break
		}
		cur = x
	}
	return cur
}

// writeProblems returns the writes ("Shard write" lines) that a replica
// sent for a parent it did not own: by its own log, it did not hold the
// parent's bucket then (under the ID it had then), or another process
// had claimed that bucket since it last claimed it itself. Both are sound
// from the logs alone: a claim is logged after it took effect, a write
// before it is sent, and a bucket is claimed only once its last holder
// released it or its Lease expired.
func writeProblems(logs []shardLog) []string {
	type claim struct {
		at   time.Time
		proc string
	}
	claims := map[int][]claim{}
	for _, l := range logs {
		for _, m := range l.moves {
			for b := 0; b < shardBucketCount; b++ {
				if m.claimed.has(b) {
					claims[b] = append(claims[b], claim{m.at, l.proc})
				}
			}
		}
	}
	var out []string
	for _, l := range logs {
		h := holdings(l)
		for _, w := range l.writes {
			b := bucketOf(w.uid)
			now := heldWhen(h, w.at)
			if !now.held.has(b) {
				out = append(out, fmt.Sprintf("%s (%s, holding %s) sent %s for %s at %s, bucket %d", l.proc, now.id, now.held, w.method, w.uid, w.at.Format(time.RFC3339Nano), b))
				continue
			}
			var own time.Time
			for _, c := range claims[b] {
				if c.proc == l.proc && !c.at.After(w.at) && c.at.After(own) {
					own = c.at
				}
			}
			for _, c := range claims[b] {
				if c.proc != l.proc && c.at.After(own) && c.at.Before(w.at) {
					out = append(out, fmt.Sprintf("%s (%s) sent %s for %s at %s, bucket %d, which %s claimed at %s", l.proc, now.id, w.method, w.uid, w.at.Format(time.RFC3339Nano), b, c.proc, c.at.Format(time.RFC3339Nano)))
					break
				}
			}
		}
	}
	return out
}

func TestShardedWriteCheckerFindsStaleWrites(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// u0 is in bucket 50, u1 elsewhere.
	u0, u1 := "", "a"
	all, _ := parseBuckets("0-63")
	b50, _ := parseBuckets("50")
	write := func(uid string, s int) shardWrite { return shardWrite{uid: uid, method: "PATCH", at: at(s)} }
	p := func(writes ...shardWrite) shardLog {
		return shardLog{proc: "p", joins: []memberJoin{{id: "p-1", at: at(0)}}, moves: []bucketMove{{id: "p-1", at: at(1), claimed: all}}, writes: writes}
	}
	for _, tt := range []struct {
		name string
		logs []shardLog
		want int
	}{
		{name: "while held", logs: []shardLog{p(write(u0, 2), write(u1, 3))}},
		{name: "before the claim", logs: []shardLog{p(write(u0, 0))}, want: 1},
		{name: "after a release", logs: func() []shardLog {
			l := p(write(u0, 5), write(u1, 5))
			l.moves = append(l.moves, bucketMove{id: "p-1", at: at(4), released: b50})
			return []shardLog{l}
		}(), want: 1},
		{name: "after a lapse, and under the new ID before claiming", logs: func() []shardLog {
			l := p(write(u0, 5), write(u0, 7), write(u0, 9))
			l.lapses = []time.Time{at(4)}
			l.joins = append(l.joins, memberJoin{id: "p-2", at: at(6)})
			l.moves = append(l.moves, bucketMove{id: "p-2", at: at(8), claimed: b50})
			return []shardLog{l}
		}(), want: 2},
		{name: "frozen: another claimed it, the lapse not logged yet", logs: []shardLog{
			p(write(u0, 5)),
			{proc: "q", joins: []memberJoin{{id: "q-1", at: at(0)}}, moves: []bucketMove{{id: "q-1", at: at(3), claimed: b50}}},
		}, want: 1},
		{name: "claimed back after another held it", logs: func() []shardLog {
			l := p(write(u0, 5))
			l.moves = append(l.moves, bucketMove{id: "p-1", at: at(2), released: b50}, bucketMove{id: "p-1", at: at(4), claimed: b50})
			return []shardLog{l, {proc: "q", joins: []memberJoin{{id: "q-1", at: at(0)}}, moves: []bucketMove{{id: "q-1", at: at(3), claimed: b50}}}}
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if bucketOf(u0) != 50 || bucketOf(u1) == 50 {
				t.Fatalf("buckets of the fixture's uids: %d, %d", bucketOf(u0), bucketOf(u1))
			}
			if got := writeProblems(tt.logs); len(got) != tt.want {
				t.Errorf("writeProblems() = %q, want %d problems", got, tt.want)
			}
		})
	}
}

func TestShardedOverlapCheckerFindsOverlaps(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	iv := func(proc, uid string, from, to int) reconcileInterval {
		return reconcileInterval{proc: proc, replica: proc + "-x", uid: uid, start: at(from), end: at(to)}
	}
	for _, tt := range []struct {
		name string
		ivs  []reconcileInterval
		want []overlap
	}{
		{name: "one after the other", ivs: []reconcileInterval{iv("a", "u", 0, 10), iv("b", "u", 20, 30), iv("a", "u", 40, 50)}},
		{name: "touching", ivs: []reconcileInterval{iv("a", "u", 0, 10), iv("b", "u", 10, 20)}},
		{name: "same process", ivs: []reconcileInterval{iv("a", "u", 0, 10), iv("a", "u", 5, 20)}},
		{name: "other parents", ivs: []reconcileInterval{iv("a", "u", 0, 10), iv("b", "v", 5, 20)}},
		{
			name: "two processes at once",
			ivs:  []reconcileInterval{iv("b", "u", 5, 20), iv("a", "u", 0, 10)},
			want: []overlap{{iv("a", "u", 0, 10), iv("b", "u", 5, 20)}},
		},
		{
			name: "one inside a long one, after a short one",
			ivs:  []reconcileInterval{iv("a", "u", 0, 100), iv("a", "u", 1, 2), iv("b", "u", 50, 60)},
			want: []overlap{{iv("a", "u", 0, 100), iv("b", "u", 50, 60)}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := overlaps(tt.ivs)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(overlap{}, reconcileInterval{})); diff != "" {
				t.Errorf("overlaps() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShardedLogParser(t *testing.T) {
	log := `I1127 klog text that is not JSON
{"time":"2025-01-01T00:00:00.5Z","level":"INFO","msg":"Joined the shard group","group":"g","id":"r0-abcde"}
{"time":"2025-01-01T00:00:01Z","level":"INFO","msg":"Shard buckets moved","id":"r0-abcde","claimed":"0-20,33","released":"","holds":"0-20,33","members":3}
{"time":"2025-01-01T00:00:02Z","level":"DEBUG","msg":"Shard write","uid":"u1","method":"apply","at":"2025-01-01T00:00:01.999999999Z"}
{"time":"2025-01-01T00:00:02Z","level":"DEBUG","msg":"Reconcile interval","uid":"u1","start":"2025-01-01T00:00:01.5Z","end":"2025-01-01T00:00:02Z","replica":"r0-abcde"}
{"time":"2025-01-01T00:00:03Z","level":"INFO","msg":"Refused a write for a parent this replica does not own","uid":"u2"}
{"time":"2025-01-01T00:00:03.5Z","level":"INFO","msg":"This replica's shard Lease lapsed; it holds nothing now and joins again under a new ID","id":"r0-abcde","dropped":"0-20,33"}
{"time":"2025-01-01T00:00:04Z","level":"INFO","msg":"Left the shard group"}
{"time":"2025-01-01T00:00:04Z","level":"INFO","msg":"cut short by SIGK`
	got, err := parseShardLog("p", strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	ts := func(s string) time.Time { v, _ := time.Parse(time.RFC3339Nano, s); return v }
	held, _ := parseBuckets("0-20,33")
	want := shardLog{
		proc:      "p",
		intervals: []reconcileInterval{{proc: "p", replica: "r0-abcde", uid: "u1", start: ts("2025-01-01T00:00:01.5Z"), end: ts("2025-01-01T00:00:02Z")}},
		writes:    []shardWrite{{uid: "u1", method: "apply", at: ts("2025-01-01T00:00:01.999999999Z")}},
		refused:   []string{"u2"},
		joins:     []memberJoin{{id: "r0-abcde", at: ts("2025-01-01T00:00:00.5Z")}},
		moves:     []bucketMove{{id: "r0-abcde", at: ts("2025-01-01T00:00:01Z"), claimed: held}},
		lapses:    []time.Time{ts("2025-01-01T00:00:03.5Z")},
		lefts:     []time.Time{ts("2025-01-01T00:00:04Z")},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(shardLog{}, reconcileInterval{}, shardWrite{}, memberJoin{}, bucketMove{})); diff != "" {
		t.Errorf("parseShardLog() (-want +got):\n%s", diff)
	}
	_, err = parseShardLog("p", strings.NewReader(`{"msg":"Reconcile interval","uid":"u1","start":"yesterday","end":"2025-01-01T00:00:02Z","replica":"r"}`))
	if err == nil || !strings.Contains(err.Error(), "start") {
		t.Errorf("an interval with a bad start: error %v, want one naming start", err)
	}
}

func TestShardedBucketSets(t *testing.T) {
	for _, s := range []string{"", "0", "0-20,33", "5,7-9,63"} {
		set, err := parseBuckets(s)
		if err != nil {
			t.Fatalf("parseBuckets(%q): %v", s, err)
		}
		if got := set.String(); got != s {
			t.Errorf("parseBuckets(%q).String() = %q", s, got)
		}
	}
	for _, bad := range []string{"64", "3-1", "a", "1,,2"} {
		if _, err := parseBuckets(bad); err == nil {
			t.Errorf("parseBuckets(%q) = nil error, want one", bad)
		}
	}
	if _, err := parseShardTable(`{"a":"0-10","b":"10-63"}`); err == nil {
		t.Error("a table whose members share bucket 10: nil error, want one")
	}
	table, err := parseShardTable(`{"a":"0-31","b":"32-63"}`)
	if err != nil || table["a"].len() != 32 || !table["b"].has(63) {
		t.Errorf("parseShardTable() = %v, %v", table, err)
	}
	// FNV-1a-64 of "" is 0xcbf29ce484222325 and of "a" 0xaf63dc4c8601ec8c:
	// their top 6 bits are 50 and 43.
	for uid, want := range map[string]int{"": 50, "a": 43} {
		if got := bucketOf(uid); got != want {
			t.Errorf("bucketOf(%q) = %d, want %d", uid, got, want)
		}
	}
}
