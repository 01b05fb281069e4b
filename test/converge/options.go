package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The ways Loom runs in a loom phase (-loom-mode).
const (
	// modeProcess runs bin/loom run in a process of its own, as users do.
	modeProcess = "process"
	// modeInProcess runs Loom's Manager in this process, for profiling.
	modeInProcess = "inprocess"
)

// defaultMetricsAddr is the default of loom run --metrics-bind-address.
const defaultMetricsAddr = ":8080"

// options are the command-line flags.
type options struct {
	parents, workers int
	replicas         int64
	kubeconfig       string
	templates        string
	example          string
	crds             string
	clusterDir       string
	phases           []phaseSpec
	qps              float64
	burst            int
	target           float64
	targetReady      float64
	targetRSS        float64
	// targetIdleRSS is the idle step's target, in MiB.
	targetIdleRSS float64
	// idle is how long the idle step lets Loom and the floor run before
	// reading their RSS; 0 skips it.
	idle time.Duration
	// floor is the package of the idle step's floor program ("": none).
	floor         string
	noiseLimit    float64
	timeout       time.Duration
	deleteTimeout time.Duration
	touchTimeout  time.Duration
	portWait      time.Duration
	settle        time.Duration
	steady        time.Duration
	quiet         time.Duration
	cpuprofile    string
	memprofile    string
	loomV         int
	loomMode      string
	loomBin       string
	loomArgs      []string
	// loomMemoryLimit is -loom-memory-limit, in MiB (0: no cgroup).
	loomMemoryLimit float64
	// metricsAddr is Loom's --metrics-bind-address, from -loom-args or
	// its default.
	metricsAddr string
	// bare: the cluster has no controller-manager (-bare).
	bare bool
	// loomReplicas is how many loom run processes a loom phase runs
	// unless its -phases entry says (loom/R); more than one run with
	// --sharded, each on ports of its own.
	loomReplicas int
	// balanceTimeout is how long a sharded phase waits for its replicas
	// to hold the 64 buckets between them, evenly, before its warm-up.
	balanceTimeout time.Duration
	// targetShardRSS is the largest ratio of a sharded replica's peak RSS
	// to one unsharded replica's.
	targetShardRSS float64
	// handover: a sharded phase measures a SIGTERM and a SIGKILL takeover
	// once converged (handover.go), editing at most handoverEdits of the
	// parents that move (0: all).
	handover      bool
	handoverEdits int
	// loomNamespace: loom run gets the phase's namespace as --namespace.
	loomNamespace bool
	// restart: restart a converged Loom (SIGTERM, then SIGKILL) and
	// measure until it is idle again (restart.go); restartSettle is how
	// long nothing must move for it to be idle, restartTimeout the time
	// limit of each restart, targetRestartReady the goal for its /readyz.
	restart                                           bool
	restartSettle, restartTimeout, targetRestartReady time.Duration
	// workloadKubeconfig is the workload cluster's kubeconfig, where a
	// remote phase places its ConfigMaps ("": none); remoteTemplates is
	// the folder of the remote phase's template set (remote.go).
	workloadKubeconfig, remoteTemplates string
	// targetRemoteTime and targetRemoteRSS are the largest ratios of a
	// remote phase's time to Ready (t1 on a bare cluster) and peak RSS
	// to a loom phase's (children in two clusters against one).
	targetRemoteTime, targetRemoteRSS float64
}

// parseFlags parses args (without the program name) on fs.
func parseFlags(fs *flag.FlagSet, args []string) (options, error) {
	o := options{}
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = filepath.Join(".cluster", "kubeconfig")
	}
	var phases, loomArgs string
	fs.IntVar(&o.parents, "parents", 1000, "MyResources created in each timed round")
	fs.IntVar(&o.workers, "workers", 8, "the baseline's and the creator's goroutines, and the in-process Loom's Options.Workers (bin/loom keeps its own default)")
	fs.Int64Var(&o.replicas, "replicas", 1, "spec.replicas of every parent (pods per parent)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", kubeconfig, "kubeconfig of the local cluster (default $KUBECONFIG, then .cluster/kubeconfig)")
	fs.StringVar(&o.templates, "templates", "templates", "Loom's template folder (the baseline renders with templates/myresource); Loom gets a copy")
	fs.StringVar(&o.example, "example", filepath.Join("examples", "myresource-full.yaml"), "the parent every MyResource is a copy of")
	fs.StringVar(&o.crds, "crds", "crds", "CRDs to install when the MyResource CRD is missing")
	fs.StringVar(&o.clusterDir, "cluster-dir", ".cluster", "the local cluster's state folder, for its processes' pids (CPU accounting)")
	fs.StringVar(&phases, "phases", "base,loom,base", "phases to run, in order, comma-separated: base, loom or remote (loom with each parent's ConfigMap in the workload cluster, -workload-kubeconfig), each optionally followed by /R (loom, remote: R replicas of loom run, with --sharded when R > 1; default -loom-replicas) and @N (N parents in its timed round; default -parents), e.g. loom@10000,loom/3@30000 or loom@1000,remote@1000")
	fs.IntVar(&o.loomReplicas, "loom-replicas", 1, "replicas of loom run in each loom phase that does not say /R (process mode): 1 runs one, as users do; more run each with --sharded and ports of their own (each --*-bind-address port plus the replica's index)")
	fs.DurationVar(&o.balanceTimeout, "balance-timeout", 3*time.Minute, "time limit for a sharded phase's replicas to hold the 64 buckets between them evenly (sum of loom_shard_buckets 64, each within one of the others) before its warm-up")
	fs.BoolVar(&o.loomNamespace, "loom-namespace", false, "process mode: pass the phase's namespace to loom run as --namespace, so that it reconciles no parent of someone else's tests on a shared cluster (by default it watches every namespace, as users run it)")
	fs.BoolVar(&o.handover, "handover", true, "once a sharded phase has converged, SIGTERM its first replica while editing the parents it held, time until their Deployments carry the edit and count the writes; restart it, then the same with SIGKILL")
	fs.IntVar(&o.handoverEdits, "handover-edits", 1000, "the most parents a takeover edits, spread over those the stopped replica held (0: all of them)")
	fs.Float64Var(&o.qps, "qps", 1000, "client QPS of the baseline, the creator, the harness and the in-process Loom")
	fs.IntVar(&o.burst, "burst", 2000, "client burst of the same clients")
	fs.Float64Var(&o.target, "target", 1.1, "the Loom/baseline ratio of t1 to meet (default 1.2 with -bare, where t1 is the last status written)")
	fs.Float64Var(&o.targetReady, "target-ready", 1.15, "the Loom/baseline ratio of t2 (all Ready) to meet")
	fs.Float64Var(&o.targetRSS, "target-rss", 60, "Loom's peak RSS to stay within, in MiB (process mode; with replicas, each one's)")
	fs.Float64Var(&o.targetShardRSS, "target-shard-rss", 1.15, "the largest ratio of a sharded replica's peak RSS to one unsharded replica's, when a run has both")
	fs.Float64Var(&o.noiseLimit, "noise-limit", 0.10, "a phase where processes outside the cluster and this one used more than this share of the busy CPU is noisy, and left out of the ratios")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "time limit of each round, until t2 (t1 with -bare)")
	fs.DurationVar(&o.deleteTimeout, "delete-timeout", 5*time.Minute, "time limit for deleting each namespace (with -bare: its parents and children)")
	fs.DurationVar(&o.touchTimeout, "touch-timeout", 5*time.Minute, "time limit for the full re-reconcile that follows a template touch")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "wait after t2, and after the re-reconcile, before the final write count (Events are sent in the background)")
	fs.DurationVar(&o.steady, "steady", 15*time.Second, "Loom's steady RSS is read once it has reconciled nothing for this long after the timed round")
	fs.DurationVar(&o.quiet, "quiet", 2*time.Minute, "before each phase, wait up to this long for the machine to be mostly idle (0: do not wait)")
	fs.StringVar(&o.memprofile, "memprofile", "", "write this process's heap profile at the end of the first loom phase's timed round (Loom still running; -loom-mode inprocess only)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write the CPU profile of the loom phase's timed round: FILE for t0..t1, FILE.ready for t1..t2 (a second loom phase writes FILE.loom2 and FILE.loom2.ready; -loom-mode inprocess only)")
	fs.IntVar(&o.loomV, "loom-v", 0, "klog verbosity of Loom (process mode: appended as --v=N when not 0)")
	fs.StringVar(&o.loomMode, "loom-mode", modeProcess, "how a loom phase runs Loom: process (bin/loom run in its own process, RSS measured) or inprocess (its Manager in this process, for -cpuprofile and -memprofile)")
	fs.StringVar(&o.loomBin, "loom-bin", filepath.Join("bin", "loom"), "the loom binary of process mode (make build builds it)")
	fs.DurationVar(&o.idle, "idle", 20*time.Second, "process mode: before the phases, run loom run on an empty namespace for this long and report its RSS beside the floor's (0: skip the idle step)")
	fs.Float64Var(&o.targetIdleRSS, "target-idle-rss", 35, "Loom's idle RSS to stay within, in MiB")
	fs.StringVar(&o.floor, "floor", "./test/converge/floor", "the idle step's floor program, built with go build (\"\": none)")
	fs.DurationVar(&o.portWait, "port-wait", 0, "if Loom's metrics port is taken when a loom phase starts, wait up to this long for it to be free before failing (0: fail at once)")
	fs.Float64Var(&o.loomMemoryLimit, "loom-memory-limit", 0, "process mode: run each loom run in a memory cgroup of its own limited to this many MiB, as a pod's limits.memory limits it (Loom sets GOMEMLIMIT from it); its peak use and OOM kills are logged when it stops (0: no cgroup; needs a writable cgroup hierarchy)")
	fs.StringVar(&loomArgs, "loom-args", "", "extra arguments appended to `loom run` in process mode, split on spaces")
	fs.BoolVar(&o.bare, "bare", false, "the cluster is etcd and kube-apiserver only (no garbage collector, no Deployment ever available): t2 is not measured, and cleanup deletes the parents and children, not the namespace")
	fs.BoolVar(&o.restart, "restart", true, "once a loom phase's fleet has converged (after the re-reconcile), restart its loom run as an operator would (SIGTERM, wait for the exit, the same command again), then once more with SIGKILL, and count the API server's writes and requests until Loom is idle again (process mode, one unsharded Loom)")
	fs.DurationVar(&o.restartSettle, "restart-settle", 5*time.Second, "a restarted Loom is idle once it has reconciled every parent and then neither written nor reconciled for this long; also the span of the API server's idle rate before the signal")
	fs.DurationVar(&o.restartTimeout, "restart-timeout", 5*time.Minute, "time limit for a restarted Loom to be Ready and idle")
	fs.DurationVar(&o.targetRestartReady, "target-restart-ready", 10*time.Second, "the goal for a restarted Loom's /readyz: from its start to 200 (the issue states it at 1 000 parents)")
	fs.StringVar(&o.workloadKubeconfig, "workload-kubeconfig", defaultWorkloadKubeconfig(), "kubeconfig of the workload cluster a remote phase places its ConfigMaps in (default $"+workloadKubeconfigEnv+", then .cluster-workload/kubeconfig if it exists)")
	fs.StringVar(&o.remoteTemplates, "remote-templates", filepath.Join("test", "converge", "testdata", "remote"), "the template folder of remote phases: a MyResource set whose ConfigMap goes to the workload cluster registered as "+remoteCluster)
	fs.Float64Var(&o.targetRemoteTime, "target-remote-time", 1.3, "the largest ratio of a remote phase's time to Ready (t2; t1 with -bare) to a loom phase's, in a run with both")
	fs.Float64Var(&o.targetRemoteRSS, "target-remote-rss", 1.3, "the largest ratio of a remote phase's peak RSS to a loom phase's, in a run with both")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.parents < 1 || o.workers < 1 || o.replicas < 0 || o.loomReplicas < 1 {
		return o, errors.New("-parents, -workers and -loom-replicas must be at least 1, and -replicas at least 0")
	}
	o.loomArgs = strings.Fields(loomArgs)
	var err error
	if o.phases, err = parsePhases(phases, o); err != nil {
		return o, err
	}
	if err := checkRemote(o); err != nil {
		return o, err
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if o.bare && !explicit["target"] {
		o.target = 1.2
	}
	switch o.loomMode {
	case modeInProcess:
		if len(o.loomArgs) > 0 {
			return o, errors.New("-loom-args: only process mode runs loom run")
		}
		if o.loomMemoryLimit != 0 {
			return o, errors.New("-loom-memory-limit: only process mode runs loom run in a cgroup")
		}
		if maxReplicas(o.phases) > 1 {
			return o, errors.New("-loom-replicas and loom/R: only process mode runs replicas")
		}
	case modeProcess:
		if o.loomMemoryLimit < 0 {
			return o, fmt.Errorf("-loom-memory-limit %g: want MiB > 0, or 0 for none", o.loomMemoryLimit)
		}
		if o.cpuprofile != "" || o.memprofile != "" {
			return o, errors.New("-cpuprofile and -memprofile profile this process: they need -loom-mode inprocess")
		}
		if o.metricsAddr, err = metricsAddress(o.loomArgs); err != nil {
			return o, err
		}
		if err := checkReplicaPorts(o.loomArgs, maxReplicas(o.phases)); err != nil {
			return o, err
		}
	default:
		return o, fmt.Errorf("-loom-mode: unknown mode %q (want %s or %s)", o.loomMode, modeProcess, modeInProcess)
	}
	return o, nil
}

// metricsURL is where this process reads the metrics of a Loom serving
// them on addr: the loopback address when it listens on every one.
func metricsURL(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/metrics"
}
