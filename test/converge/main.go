package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/internal/testutil"
)

func main() {
	o, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "converge:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	results, idle, err := run(ctx, o)
	if len(results) > 0 || idle != nil {
		report(os.Stdout, o, results, idle, time.Now())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "converge:", err)
		os.Exit(1)
	}
}

// run sets up the shared clients, measures Loom idle (see measureIdle),
// and runs every phase in turn.
func run(ctx context.Context, o options) ([]phaseResult, *idleResult, error) {
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("v", strconv.Itoa(o.loomV))
	// Loom's metrics ports (one per replica), checked before the first
	// phase too: a taken one should fail the run before a long baseline
	// phase, not after.
	if o.loomMode == modeProcess {
		for i := range maxReplicas(o.phases) {
			if err := waitPortFree(ctx, shiftPort(o.metricsAddr, i), o.portWait); err != nil {
				return nil, nil, err
			}
		}
	}
	b, err := newBench(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	var idle *idleResult
	if o.loomMode == modeProcess && o.idle > 0 {
		if idle, err = measureIdle(ctx, o); err != nil {
			return nil, idle, err
		}
	}
	logf("API server %s; %s, %d workers; phases %s", b.cfg.Host, parentsPerPhase(o), o.workers, phaseList(o.phases))
	var results []phaseResult
	seen := map[string]int{}
	for _, spec := range o.phases {
		seen[spec.kind]++
		label := fmt.Sprintf("%s#%d", spec.text, seen[spec.kind])
		res, err := b.runPhase(ctx, spec, label)
		if res.measured {
			results = append(results, res)
		}
		if err != nil {
			return results, idle, err
		}
	}
	return results, idle, nil
}

func newBench(ctx context.Context, o options) (*bench, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", o.kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create clientset: %w", err)
	}
	b := &bench{opts: o, cfg: cfg, client: client, rc: kube.Discovery().RESTClient(), cpu: newCPUSampler(o.clusterDir)}
	if err := b.ensureCRD(ctx); err != nil {
		return nil, err
	}
	if b.example, err = loadExample(o.example, o.replicas); err != nil {
		return nil, err
	}
	if b.set, err = setFor(o.templates, b.example.GroupVersionKind()); err != nil {
		return nil, err
	}
	if !hasRemote(o.phases) {
		return b, nil
	}
	if b.remoteSet, err = setFor(o.remoteTemplates, b.example.GroupVersionKind()); err != nil {
		return nil, fmt.Errorf("-remote-templates: %w", err)
	}
	if b.workload, err = connectWorkload(ctx, o); err != nil {
		return nil, err
	}
	return b, nil
}

// setFor loads the template sets under dir and returns the one whose
// parent is gvk.
func setFor(dir string, gvk schema.GroupVersionKind) (*render.Set, error) {
	sets, err := render.LoadAll(dir)
	if err != nil {
		return nil, fmt.Errorf("load templates: %w", err)
	}
	for _, s := range sets {
		if s.ParentGVK() == gvk {
			return s, nil
		}
	}
	return nil, fmt.Errorf("load templates: no set under %s renders %s", dir, gvk)
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ensureCRD installs the CRDs from -crds if MyResource's is missing (a
// cluster that `make bench` just started has none), and waits until it is
// established. An installed CRD is left as it is: other tests share it.
func (b *bench) ensureCRD(ctx context.Context) error {
	name := myResourceGVR.Resource + "." + myResourceGVR.Group
	_, err := b.client.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reach the API server at %s: %w", b.cfg.Host, err)
	}
	if err := testutil.InstallCRDs(ctx, b.client, b.opts.crds); err != nil {
		return err
	}
	logf("installed the CRDs in %s", b.opts.crds)
	return nil
}

// logf prints progress to stderr; the report goes to stdout.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s converge: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// secs formats a duration in seconds.
func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
