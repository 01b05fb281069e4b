//go:build e2e

package faults

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// convergeTimeout bounds a converge of a few hundred parents under a
// fault, from the first create to the last Ready. A converge of 300
// without a fault takes about 30 s on the 2-core development machine.
const convergeTimeout = 4 * time.Minute

// The API server restarted mid-converge of 300 parents: Loom keeps
// running, its informers and requests recover, and every parent converges
// without restarting Loom, with nothing lost and no child deleted.
func TestAPIServerRestartMidConverge(t *testing.T) {
	const parents = 300
	r := newRun(t, filepath.Join(repoRoot, "templates"))
	r.create(parents, nil)
	waitMidConverge(t, r.ns, parents, parents/5)
	_ = r.meter.observe(context.Background()) // count the writes up to the restart
	clusterScript(t, "restart", "kube-apiserver")
	r.finish(expect{timeout: convergeTimeout, perParent: 10, kinds: fullChildren})
}

// etcd compacted mid-converge, under watches that then have to go back to
// a compacted revision: compaction at the current revision, then an etcd
// restart. The API server's watches on etcd resume from their last
// revision, which is compacted, so its watch cache relists, and the
// clients' watches (Loom's) are answered 410 Gone ("too old resource
// version") and relist too. Loom's log (-v=4, where client-go reports
// it) proves that they did.
func TestEtcdCompactionMidConverge(t *testing.T) {
	const parents = 300
	r := newRun(t, filepath.Join(repoRoot, "templates"), "-v=4")
	r.create(parents, nil)
	waitMidConverge(t, r.ns, parents, parents/5)
	rev := clusterScript(t, "compact")
	_ = r.meter.observe(context.Background())
	clusterScript(t, "restart", "etcd")
	r.finish(expect{timeout: convergeTimeout, perParent: 10, kinds: fullChildren})
	var relists []string
	for _, l := range strings.Split(r.loom.Output(), "\n") {
		if strings.Contains(l, "Watch closed") && strings.Contains(l, "too old resource version") {
			relists = append(relists, l)
		}
	}
	if len(relists) == 0 {
		t.Fatalf("no watch of Loom's was closed with 410 Gone after the compaction at revision %s: the fault did not happen", rev)
	}
	t.Logf("after the compaction at revision %s, %d of Loom's watches ended with 410 Gone and relisted, e.g.\n%s", rev, len(relists), relists[0])
}
