//go:build e2e

package faults

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-operator/loom/test/env"
)

// convergeTimeout bounds a converge of a few hundred parents under a
// fault, from the first create to the last Ready. A converge of 300
// without a fault takes about 30 s on the 2-core development machine.
const convergeTimeout = 4 * time.Minute

// The API server restarted mid-converge of 300 parents, right after 60 of
// them changed their spec: Loom keeps running, its informers and requests
// recover, and every parent converges without restarting Loom, with no
// change lost and no child deleted.
func TestAPIServerRestartMidConverge(t *testing.T) {
	e := env.From(t)
	const parents = 300
	r := newRun(t, filepath.Join(e.Root, "templates"))
	r.create(parents, nil)
	waitMidConverge(t, r.ns, parents, parents/5)
	r.bumpReplicas(parents / 5)
	r.restart("kube-apiserver")
	r.finish(expect{timeout: convergeTimeout, perParent: 10, kinds: fullChildren})
}

// etcd compacted mid-converge, with watches that have to relist: the
// history is compacted at the current revision, then the API server is
// restarted, so its watch cache starts again at the compacted revision.
// Loom's watches resume from older revisions and are answered 410 Gone
// ("too old resource version"), and any list at their old revision that
// reaches etcd is refused as compacted; they relist from scratch. Loom's
// log (-v=4, where client-go reports it) must show this for its watch of
// the parents or of a child kind.
func TestEtcdCompactionMidConverge(t *testing.T) {
	e := env.From(t)
	const parents = 300
	r := newRun(t, filepath.Join(e.Root, "templates"), "-v=4")
	r.create(parents, nil)
	waitMidConverge(t, r.ns, parents, parents/5)
	r.bumpReplicas(parents / 5)
	rev := clusterScript(t, "compact")
	r.restart("kube-apiserver")
	r.finish(expect{timeout: convergeTimeout, perParent: 10, kinds: fullChildren})
	relisted := map[string]int{}
	for _, l := range strings.Split(r.loom.Output(), "\n") {
		if strings.Contains(l, "Watch closed") && strings.Contains(l, "too old resource version") {
			_, resource, _ := strings.Cut(l, "Resource=")
			resource, _, _ = strings.Cut(resource, `"`)
			relisted[resource]++
		}
	}
	t.Logf("after the compaction at revision %s, Loom's watches that ended with 410 Gone and relisted: %v", rev, relisted)
	if relisted["myresources"]+relisted["deployments"]+relisted["services"]+relisted["configmaps"] == 0 {
		t.Fatalf("none of Loom's watches of parents or children ended with 410 Gone after the compaction: the fault did not happen")
	}
}
