//go:build e2e

package e2e

// loom run --sharded over two clusters (issue 34): the handover bound of
// a SIGKILL holds for children in the workload cluster too.

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/loom-operator/loom/internal/testutil"
)

// gadgetTwoClusters is the Gadget set of the sharding tests, made to
// place a second ConfigMap, NAME-gadget too, in each cluster it may use:
// the workload cluster w1.
var gadgetTwoClusters = map[string]string{
	"loom.yaml": `parent:
  apiVersion: shard.e2e.loom.dev/v1alpha1
  kind: Gadget
schema:
  spec:
    value: string | description="Copied into the ConfigMaps' data.value."
clusters:
  names: [w1]
`,
	"configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-gadget
data:
  value: {{ .Spec.value | default "" | quote }}
{{- range .Clusters }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Name }}-gadget
  annotations:
    loom.dev/cluster: {{ .Name }}
data:
  value: {{ $.Spec.value | default "" | quote }}
{{- end }}
`,
}

// waitRemoteGadgets polls, every 50 ms, until the ConfigMap NAME-gadget
// of each Gadget among parents, in the workload cluster, has data.value
// rev, and returns when it first saw them all so.
func waitRemoteGadgets(t *testing.T, dyn dynamic.Interface, ns string, parents []shardParent, rev string, timeout time.Duration) time.Time {
	t.Helper()
	var at time.Time
	testutil.Poll(t, 50*time.Millisecond, timeout, "the Gadgets' ConfigMaps in the workload cluster say "+rev, func(ctx context.Context) error {
		list, err := dyn.Resource(configMapGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=loom"})
		if err != nil {
			return err
		}
		now := time.Now()
		value := map[string]string{}
		for _, cm := range list.Items {
			value[cm.GetName()], _, _ = unstructured.NestedString(cm.Object, "data", "value")
		}
		var missing []string
		for _, p := range parents {
			if p.gvr == gadgetGVR && value[p.name+"-gadget"] != rev {
				missing = append(missing, p.name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d not yet, e.g. %v", len(missing), missing[:min(5, len(missing))])
		}
		at = now
		return nil
	})
	return at
}

// Three replicas of loom run --sharded over two clusters: the Gadgets
// place a ConfigMap in the local cluster and one in the workload cluster.
// One replica is SIGKILLed, and every parent it held is edited at once:
// the edits are in the children in both clusters within killEditBound
// (the Lease duration + 5 s) of the signal, with no two writers.
func TestShardedTwoClustersSIGKILLEditsLand(t *testing.T) {
	w := workload(t)
	e := newShardEnv(t, 15)
	w.namespace(t, e.ns)
	loomNS := e.NewNamespace(t)
	register(t, loomNS, "w1", w.kubeconfig)
	testutil.WriteFiles(t, filepath.Join(e.templates, "gadget"), gadgetTwoClusters)
	// The Gadgets hold loom.dev/remote-children once their children are
	// placed in w1; the replicas are stopped first (their cleanup runs
	// first), then the Gadgets are let go so that the namespace goes.
	t.Cleanup(func() {
		list, err := e.Dyn.Resource(gadgetGVR).Namespace(e.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, p := range list.Items {
			_, _ = e.Dyn.Resource(gadgetGVR).Namespace(e.ns).Patch(context.Background(), p.GetName(), types.MergePatchType,
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
	rs := e.startN(3, "--loom-namespace", loomNS)
	table := e.waitBalanced(t, time.Minute, rs...)
	e.waitConverged(t, 2*time.Minute)
	waitRemoteGadgets(t, w.dyn, e.ns, e.parents, "0", time.Minute)

	victim, others := rs[0], rs[1:]
	moved := e.parentsIn(table[victim.memberID(t)])
	gadgets := 0
	for _, p := range moved {
		if p.gvr == gadgetGVR {
			gadgets++
		}
	}
	if gadgets == 0 {
		t.Fatalf("%s holds %v, with none of the %d Gadgets in it", victim.name, table[victim.memberID(t)], len(e.parents)/2)
	}
	signalled := time.Now()
	victim.signal(t, syscall.SIGKILL)
	e.patchAll(t, moved, 1)
	local := e.waitEdits(t, moved, "1", killEditBound+30*time.Second)
	remote := waitRemoteGadgets(t, w.dyn, e.ns, moved, "1", killEditBound+30*time.Second)
	t.Logf("SIGKILL: the edits of the %d parents (%d Gadgets) %s held were in their local children %s and in the workload cluster %s after the signal (bound %s)",
		len(moved), gadgets, victim.name, local.Sub(signalled).Round(time.Millisecond), remote.Sub(signalled).Round(time.Millisecond), killEditBound)
	if took := local.Sub(signalled); took > killEditBound {
		t.Errorf("the edits of the %d moved parents were in their local children %s after the SIGKILL, want at most %s", len(moved), took.Round(time.Millisecond), killEditBound)
	}
	if took := remote.Sub(signalled); took > killEditBound {
		t.Errorf("the edits of the %d moved Gadgets were in the workload cluster %s after the SIGKILL, want at most %s", gadgets, took.Round(time.Millisecond), killEditBound)
	}
	e.waitBalanced(t, 30*time.Second, others...)
	e.checkNoTwoWriters(t, logsOf(t, rs...))
}
