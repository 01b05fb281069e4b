package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
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

// options are the command-line flags.
type options struct {
	parents, workers int
	replicas         int64
	kubeconfig       string
	templates        string
	example          string
	crds             string
	clusterDir       string
	phases           []string
	qps              float64
	burst            int
	target           float64
	noiseLimit       float64
	timeout          time.Duration
	deleteTimeout    time.Duration
	settle           time.Duration
	quiet            time.Duration
	cpuprofile       string
	memprofile       string
	loomV            int
}

func parseFlags() (options, error) {
	o := options{}
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = filepath.Join(".cluster", "kubeconfig")
	}
	var phases string
	flag.IntVar(&o.parents, "parents", 1000, "MyResources created in each timed round")
	flag.IntVar(&o.workers, "workers", 8, "Loom's Options.Workers, and the baseline's and the creator's goroutines")
	flag.Int64Var(&o.replicas, "replicas", 1, "spec.replicas of every parent (pods per parent)")
	flag.StringVar(&o.kubeconfig, "kubeconfig", kubeconfig, "kubeconfig of the local cluster (default $KUBECONFIG, then .cluster/kubeconfig)")
	flag.StringVar(&o.templates, "templates", "templates", "Loom's template folder (the baseline renders with templates/myresource)")
	flag.StringVar(&o.example, "example", filepath.Join("examples", "myresource-full.yaml"), "the parent every MyResource is a copy of")
	flag.StringVar(&o.crds, "crds", "crds", "CRDs to install when the MyResource CRD is missing")
	flag.StringVar(&o.clusterDir, "cluster-dir", ".cluster", "the local cluster's state folder, for its processes' pids (CPU accounting)")
	flag.StringVar(&phases, "phases", "base,loom,base", "phases to run, in order: base or loom, comma-separated")
	flag.Float64Var(&o.qps, "qps", 1000, "client QPS of every client (baseline, Loom, creator, harness)")
	flag.IntVar(&o.burst, "burst", 2000, "client burst of every client")
	flag.Float64Var(&o.target, "target", 1.15, "the Loom/baseline ratio to meet")
	flag.Float64Var(&o.noiseLimit, "noise-limit", 0.10, "a phase where processes outside the cluster and this one used more than this share of the busy CPU is noisy, and left out of the ratios")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "time limit of each round, until t2")
	flag.DurationVar(&o.deleteTimeout, "delete-timeout", 5*time.Minute, "time limit for deleting each namespace")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "wait after t2 before the final write count (Events are sent in the background)")
	flag.DurationVar(&o.quiet, "quiet", 2*time.Minute, "before each phase, wait up to this long for the machine to be mostly idle (0: do not wait)")
	flag.StringVar(&o.memprofile, "memprofile", "", "write this process's heap profile at the end of the first loom phase's timed round (Loom still running)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write the CPU profile of the loom phase's timed round: FILE for t0..t1, FILE.ready for t1..t2 (a second loom phase writes FILE.loom2 and FILE.loom2.ready)")
	flag.IntVar(&o.loomV, "loom-v", 0, "klog verbosity of the in-process Loom")
	flag.Parse()
	if flag.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", flag.Args())
	}
	if o.parents < 1 || o.workers < 1 || o.replicas < 0 {
		return o, errors.New("-parents and -workers must be at least 1, and -replicas at least 0")
	}
	for _, ph := range strings.Split(phases, ",") {
		ph = strings.TrimSpace(ph)
		if ph != kindBase && ph != kindLoom {
			return o, fmt.Errorf("-phases: unknown phase %q (want base or loom)", ph)
		}
		o.phases = append(o.phases, ph)
	}
	return o, nil
}

func main() {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "converge:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	results, err := run(ctx, o)
	if len(results) > 0 {
		report(os.Stdout, o, results)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "converge:", err)
		os.Exit(1)
	}
}

// run sets up the shared clients and runs every phase in turn.
func run(ctx context.Context, o options) ([]phaseResult, error) {
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("v", strconv.Itoa(o.loomV))
	b, err := newBench(ctx, o)
	if err != nil {
		return nil, err
	}
	logf("API server %s; %d parents, %d workers; phases %s", b.cfg.Host, o.parents, o.workers, strings.Join(o.phases, ","))
	var results []phaseResult
	seen := map[string]int{}
	for _, kind := range o.phases {
		seen[kind]++
		label := fmt.Sprintf("%s#%d", kind, seen[kind])
		res, err := b.runPhase(ctx, kind, label)
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
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
	sets, err := render.LoadAll(o.templates)
	if err != nil {
		return nil, fmt.Errorf("load templates: %w", err)
	}
	for _, s := range sets {
		if s.ParentGVK() == b.example.GroupVersionKind() {
			b.set = s
		}
	}
	if b.set == nil {
		return nil, fmt.Errorf("load templates: no set under %s renders %s", o.templates, b.example.GroupVersionKind())
	}
	return b, nil
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
