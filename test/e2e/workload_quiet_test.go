//go:build e2e

package e2e

// Children in a workload cluster (issue 34), continued: a converged
// parent writes nothing to either cluster, and a registration whose
// kubeconfig runs a credential plugin is refused.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/loom-operator/loom/test/env"
)

// workloadQuietFor is how long TestWorkloadClusterSteadyStateIsSilent watches a
// converged parent for writes: three times the 10 s a cluster that did not
// answer is taken as down, and longer than any requeue of a parent that
// is Ready, so that a loop of any period the controller has shows.
const workloadQuietFor = 30 * time.Second

// writesOf lists the write requests counted, of any resource, as
// "VERB resource[/sub]: n".
func (c requestCounts) writesOf() []string {
	var out []string
	for k, v := range c {
		switch k.verb {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
			r := k.resource
			if k.subresource != "" {
				r += "/" + k.subresource
			}
			if v > 0 {
				out = append(out, fmt.Sprintf("%s %s: %.0f", k.verb, r, v))
			}
		}
	}
	sort.Strings(out)
	return out
}

// A parent with a child in the local cluster and one in the workload
// cluster reaches Ready, and then sends no write to either cluster for
// 30 s: the local cluster's writes are counted by Loom's own transport,
// the workload cluster's by a counting proxy that the registration's
// kubeconfig points at (Loom is its only client).
func TestWorkloadClusterSteadyStateIsSilent(t *testing.T) {
	w := workload(t)
	e := env.From(t)
	t.Parallel()
	ns, loomNS := e.NewNamespace(t), e.NewNamespace(t)
	w.namespace(t, ns)
	proxy := newAPICounterTo(t, e.NeedWorkload(t).Config, t.TempDir(), "w1")
	kc, err := os.ReadFile(proxy.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	register(t, loomNS, "w1", kc)
	s := fanoutSet(t, "Quiet")
	l := startFanoutLoom(t, s, ns, loomNS)
	s.create(t, ns, "web", "message: hello\n")
	waitConditionGVR(t, s.gvr, ns, "web", "Ready", "True")
	waitData(t, e.Dyn, ns, "web-local", "hello")
	remote := waitData(t, w.dyn, ns, "web-remote", "hello")
	if n := proxy.counts().verb("APPLY", "configmaps"); n == 0 {
		t.Fatalf("the proxy counted no apply of a ConfigMap in the workload cluster: Loom does not reach it through the proxy")
	}

	// The last status write of the converge may still be on its way:
	// wait until neither cluster has seen a write for 3 s.
	last, lastRemote := int64(-1), ""
	var since time.Time
	eventually(t, 30*time.Second, "no write to either cluster for 3 s", func(context.Context) error {
		n, _ := l.writes.snapshot()
		r := strings.Join(proxy.counts().writesOf(), "; ")
		if n != last || r != lastRemote {
			last, lastRemote, since = n, r, time.Now()
			return fmt.Errorf("writes still come: %d local; remote: %s", n, r)
		}
		if time.Since(since) < 3*time.Second {
			return fmt.Errorf("quiet for %s only", time.Since(since).Round(time.Second))
		}
		return nil
	})

	l.writes.reset()
	before := proxy.counts()
	time.Sleep(workloadQuietFor)
	if n, reqs := l.writes.snapshot(); n != 0 {
		t.Errorf("%d writes to the local cluster in %s at steady state, want 0: %v", n, workloadQuietFor, reqs)
	}
	d := proxy.counts().sub(before)
	if writes := d.writesOf(); len(writes) != 0 {
		t.Errorf("writes to the workload cluster in %s at steady state, want none: %s", workloadQuietFor, strings.Join(writes, "; "))
	}
	t.Logf("in %s at steady state, Loom's requests to the workload cluster: %v", workloadQuietFor, d)
	again := waitData(t, w.dyn, ns, "web-remote", "hello")
	if again.GetResourceVersion() != remote.GetResourceVersion() {
		t.Errorf("web-remote was written at steady state: resourceVersion %s, then %s", remote.GetResourceVersion(), again.GetResourceVersion())
	}
}

// execKubeconfig is kubeconfig with each user's credentials replaced by an
// exec credential plugin, a script that writes the file ran when it runs.
func execKubeconfig(t *testing.T, kubeconfig []byte, ran string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(t.TempDir(), "credential-plugin.sh")
	script := fmt.Sprintf("#!/bin/sh\ntouch %q\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"none\"}}'\n", ran)
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			Command: plugin, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}}
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A registration whose kubeconfig runs an exec credential plugin, with
// Loom started without --allow-kubeconfig-exec: the parent that places a
// child there is not Ready, and its status names the flag; the plugin
// never runs, and nothing is written in that cluster; the parent's child
// in the local cluster is applied all the same.
func TestWorkloadClusterExecKubeconfigRefused(t *testing.T) {
	w := workload(t)
	e := env.From(t)
	t.Parallel()
	ns, loomNS := e.NewNamespace(t), e.NewNamespace(t)
	w.namespace(t, ns)
	ran := filepath.Join(t.TempDir(), "plugin-ran")
	register(t, loomNS, "w1", execKubeconfig(t, w.kubeconfig, ran))
	s := fanoutSet(t, "Execed")
	startFanoutLoom(t, s, ns, loomNS)
	s.create(t, ns, "web", "message: hello\n")

	eventually(t, 60*time.Second, "web says why it is not Ready, naming --allow-kubeconfig-exec", func(ctx context.Context) error {
		p, err := e.Get(ctx, s.gvr, ns, "web")
		if err != nil {
			return err
		}
		st, reason, msg := condition(p, "Ready")
		_, dreason, dmsg := condition(p, "Degraded")
		if st != "False" || !strings.Contains(msg+" "+dmsg, "--allow-kubeconfig-exec") {
			return fmt.Errorf("Ready=%s %s %.300q; Degraded %s %.300q", st, reason, msg, dreason, dmsg)
		}
		t.Logf("Ready=%s %s %q; Degraded %s %q", st, reason, msg, dreason, dmsg)
		return nil
	})
	waitData(t, e.Dyn, ns, "web-local", "hello")
	list, err := w.dyn.Resource(configMapGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d ConfigMaps in the workload cluster's namespace %s, want none: the exec kubeconfig was used", len(list.Items), ns)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the credential plugin ran; without --allow-kubeconfig-exec, Loom must not run it")
	}
}
