package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	memlimit "github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/controller"
	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/engine/shard/member"
	"github.com/loom-operator/loom/internal/kubeclient"
	"github.com/loom-operator/loom/internal/version"
)

type runOptions struct {
	templates   string
	kube        kubeTarget
	namespace   string
	workers     int
	resync      time.Duration
	timeout     time.Duration
	qps         float32
	burst       int
	metricsAddr string
	pprofAddr   string
	leaderElect bool
	leaseNS     string
	leaseName   string
	installCRDs bool
	logFormat   string
	// releasePages is --release-startup-pages.
	releasePages bool
	// verbosity is -v, for --log-format json.
	verbosity int
	shard     shardOptions
	// loomNS is --loom-namespace, whose Secrets register workload
	// clusters; allowExec is --allow-kubeconfig-exec.
	loomNS    string
	allowExec bool
	// webhook is the conversion webhook's flags (webhookserve.go).
	webhook webhookServeOptions
}

func newRunCommand() *cobra.Command {
	o := runOptions{}
	cmd := &cobra.Command{
		Use:   "run --templates DIR",
		Short: "Run the operator: watch parents, render, apply, prune and report status",
		Long: `Run loads every template set under --templates and, for each parent kind,
watches its objects, renders their children, server-side applies them (field
manager "loom"), prunes children that no longer render, and writes the
parent's status. Template edits are picked up without a restart. A parent
kind whose CRD is not installed yet is started when the CRD appears.

With --install-crds, Loom server-side applies each set's generated CRD (what
"loom crd -t SET" prints) before it watches the kind, at start and on every
reload, and waits until it is established. A change that would break parents
already stored (a removed field they set, a narrowed type, a tightened
constraint they violate, a new required field without a default, a changed
scope, a removed version) is refused unless loom.yaml sets
schema.allowBreakingChanges: the old CRD and the running set stay, and a
Warning Event on the CRD names the parents. A CRD that Loom did not install is
left alone unless annotated loom.dev/adopt=loom.

With --sharded, every replica reconciles: each holds some of 64 buckets of
parents (by the hash of their UID) through a Lease of its own and the group's
table Lease in --shard-namespace, lists and watches only its parents and
their children, and the others take a replica's buckets over within about a
second after SIGTERM, or within 10s of a crash. A replica never writes for a
parent it no longer holds.

Every replica (leader, standby, sharded member) serves the conversion
webhook of the sets that declare several versions (loom.yaml's versions:)
on --webhook-bind-address, at /convert: the API server calls it to read or
write a parent in a version other than the stored one. Its certificate is
signed by Loom's own CA, kept in the Secret --webhook-cert-secret in
--loom-namespace that every replica reads, rotated before it expires, and
the CA bundle is injected into the webhook CRDs Loom installed (with
--webhook-cert-dir, cert-manager's certificate is served instead).

It uses --kubeconfig, then $KUBECONFIG, then the in-cluster config.
SIGTERM or SIGINT drains in-flight reconciles and exits.

Exit status: 0 after SIGTERM or SIGINT, once drained; 1 when it could not
start (bad flags, no kubeconfig, the cluster cannot be reached), when it
failed, or when it lost the leader-election Lease (--leader-elect).`,
		Example: `  loom run --templates templates/
  loom run --templates /etc/loom/templates --namespace shop --workers 8
  loom run --templates templates/ --kubeconfig .cluster/kubeconfig --metrics-bind-address :8080
  loom run --templates templates/ --install-crds
  loom run --templates templates/ --sharded --shard-namespace loom-system`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.shard.check(o.leaderElect); err != nil {
				return usageHint(cmd, err)
			}
			if err := o.webhook.check(); err != nil {
				return usageHint(cmd, err)
			}
			var err error
			if o.leaderElect {
				if o.leaseNS, err = leaseNamespace(o.leaseNS, "--leader-election-namespace"); err != nil {
					return err
				}
			}
			if o.shard.enabled {
				if o.shard.namespace, err = leaseNamespace(o.shard.namespace, "--shard-namespace"); err != nil {
					return err
				}
			}
			o.loomNS = loomNamespace(o.loomNS)
			if v := cmd.Flag("v"); v != nil {
				o.verbosity, _ = strconv.Atoi(v.Value.String())
			}
			return run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.templates, "templates", "t", "templates", "folder of template sets, searched recursively")
	o.kube.register(f, "")
	f.StringVarP(&o.namespace, "namespace", "n", "", "watch only this namespace (default: all)")
	f.IntVar(&o.workers, "workers", 8, "parents reconciled in parallel, per parent kind")
	f.DurationVar(&o.resync, "resync-period", 10*time.Minute, "reconcile every parent this often even if nothing changed (0 disables)")
	f.DurationVar(&o.timeout, "reconcile-timeout", 30*time.Second, "give up on one reconcile after this long (a hung request frees its worker); shutdown waits at most this long for in-flight reconciles")
	f.Float32Var(&o.qps, "kube-api-qps", 0, "client-side limit of API requests per second, sustained; 0: none when the API server has priority and fairness, else 200; -1: none")
	f.IntVar(&o.burst, "kube-api-burst", 0, "client-side limit of API requests per second, burst (0: twice --kube-api-qps)")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "serve /metrics, /healthz and /readyz here (empty disables)")
	f.StringVar(&o.pprofAddr, "pprof-bind-address", "", "serve Go's /debug/pprof/ profiles here, for profiling (empty disables; do not expose it)")
	f.BoolVar(&o.leaderElect, "leader-elect", false, "run several replicas, of which one (holding a Lease) reconciles")
	f.StringVar(&o.leaseNS, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's own, from $POD_NAMESPACE or the service account's namespace file; required out of a cluster)")
	f.StringVar(&o.leaseName, "leader-election-id", "loom", "name of the leader-election Lease")
	f.StringVar(&o.logFormat, "log-format", logFormatText, "log format: text (klog's) or json (one JSON object per line: time, level, msg, then the line's keys)")
	addShardFlags(f, &o.shard)
	f.BoolVar(&o.releasePages, "release-startup-pages", true, "once at start and once ready, page out the binary's code and read-only data (madvise MADV_PAGEOUT on Linux 5.4+): the pages only start-up read leave the RSS and the page cache, and the ones still used are read back on their next fault")
	f.StringVar(&o.loomNS, "loom-namespace", "", "Loom's namespace: its Secrets labelled loom.dev/cluster, and Cluster API's <cluster>-kubeconfig Secrets, register the workload clusters sets may place children in (default: the pod's namespace, else "+offline.DefaultLoomNamespace+")")
	f.BoolVar(&o.allowExec, cluster.FlagAllowExec, false, "let a registered cluster's kubeconfig run an exec credential plugin or an auth-provider (code run in Loom's container on the say of whoever wrote the Secret)")
	o.webhook.addFlags(f)
	f.BoolVar(&o.installCRDs, "install-crds", false, "server-side apply each set's generated CRD (loom crd) at start and on every template reload, refusing a change that would break stored parents unless loom.yaml sets schema.allowBreakingChanges (needs get, list, watch, create and patch on customresourcedefinitions)")
	return cmd
}

func run(ctx context.Context, o runOptions) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := setLogFormat(o.logFormat, o.verbosity, os.Stderr); err != nil {
		return err
	}
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)
	setMemoryLimit(logger)
	setGCPercent(logger)
	if o.releasePages {
		// Every linked package's init ran before this line; most of what
		// they read is never read again.
		releasePages(logger, "init")
	}

	cfg, err := restConfig(o.kube)
	if err != nil {
		return err
	}
	setRateLimit(ctx, cfg, o.qps, o.burst)
	if o.leaderElect {
		if err := checkLeaseNamespace(ctx, cfg, o.leaseNS, "--leader-election-namespace"); err != nil {
			return err
		}
	}
	if o.shard.enabled {
		if err := checkLeaseNamespace(ctx, cfg, o.shard.namespace, "--shard-namespace"); err != nil {
			return err
		}
	}

	reg, shardMetrics := newRegistry()
	// The conversion webhook runs on every replica, before and apart from
	// leader election and sharding. The CRDs --install-crds applies point
	// at it; their caBundle is the rotator's to inject.
	hook, err := startWebhook(ctx, o.webhook, cfg, o.loomNS, o.templates, reg)
	if err != nil {
		return err
	}
	mopts := controller.Options{
		Config: cfg, TemplatesDir: o.templates, Workers: o.workers, Namespace: o.namespace,
		ResyncPeriod: o.resync, Registry: reg, ReconcileTimeout: o.timeout, InstallCRDs: o.installCRDs,
		LoomNamespace: o.loomNS, AllowKubeconfigExec: o.allowExec, Webhook: o.webhook.identity(),
		CRDWebhook: crdWebhook(o.webhook),
	}
	var mem *member.Member
	if o.shard.enabled {
		if mem, err = newMember(cfg, o.shard, shardMetrics); err != nil {
			return err
		}
		mopts.Shard, mopts.ShardServerFilter = mem, o.shard.serverFilter
	}
	mgr, err := controller.New(mopts)
	if err != nil {
		return err
	}
	// leading is set while this replica holds the leader-election Lease;
	// until then it is a standby, which the probes say is fine.
	var leading atomic.Bool
	standby := func() bool { return o.leaderElect && !leading.Load() }
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "loom_leader",
		Help: "1 while this replica leads: it holds the leader-election Lease, or runs without --leader-elect; 0 while it waits to lead."},
		func() float64 {
			if standby() {
				return 0
			}
			return 1
		}))
	if o.metricsAddr != "" {
		srv, err := serveMetrics(o.metricsAddr, reg, mgr, standby, hook.Ready)
		if err != nil {
			return err
		}
		defer srv.Close()
		logger.Info("Serving metrics", "address", o.metricsAddr)
	}
	if o.pprofAddr != "" {
		srv, err := servePprof(o.pprofAddr)
		if err != nil {
			return err
		}
		defer srv.Close()
		logger.Info("Serving pprof", "address", o.pprofAddr)
	}
	logger.Info("Starting Loom", "templates", o.templates, "namespace", o.namespace, "workers", o.workers)
	if o.releasePages {
		go releaseWhenReady(ctx, logger, mgr.Ready, standby)
	}
	if mem != nil {
		return runSharded(ctx, mem, mgr)
	}
	if !o.leaderElect {
		return mgr.Run(ctx)
	}
	return runAsLeader(ctx, cfg, o, &leading, mgr.Run)
}

// newRegistry returns loom run's registry with the metrics that do not
// come from the Manager: loom_build_info, the Go runtime's and the process's, the work
// queues', the API client's, and the shard metrics. Those are registered
// with or without --sharded (at 0 without), so that their series exist
// for the dashboard and the alerts either way; a sharded run's member
// reports on the *member.Metrics returned.
func newRegistry() (*prometheus.Registry, *member.Metrics) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfoGauge(version.Get()))
	registerQueueMetrics(reg)
	registerClientMetrics(reg)
	return reg, member.NewMetrics(reg)
}

// memoryLimitRatio is the share of the container's memory limit that the Go
// runtime aims to stay under (GOMEMLIMIT): the rest is for memory the
// runtime does not count (stacks, fragmentation) and for spikes.
const memoryLimitRatio = 0.9

// setMemoryLimit sets GOMEMLIMIT to memoryLimitRatio of the cgroup's memory
// limit, so that the garbage collector works harder before the pod is
// OOM-killed, instead of letting the heap grow to twice what is live. A
// GOMEMLIMIT in the environment wins; with no cgroup limit (a process on a
// workstation) nothing is set. AUTOMEMLIMIT sets another ratio, or "off".
func setMemoryLimit(logger klog.Logger) {
	limit, err := memlimit.Set(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(memlimit.FromCgroup))
	switch {
	case err != nil:
		logger.V(1).Info("No memory limit set", "reason", err.Error())
	case limit > 0 && limit < math.MaxInt64:
		logger.Info("Memory limit", "GOMEMLIMIT", limit)
	}
}

// kubeconfigUsage is every --kubeconfig's help: where restConfig finds
// the kubeconfig without it (client-go's default loading rules).
const kubeconfigUsage = "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)"

// kubeTarget is the cluster a command reaches: --kubeconfig and
// --context, as kubectl's.
type kubeTarget struct {
	// Path is --kubeconfig ("": client-go's default loading rules).
	Path string
	// Context is --context ("": the kubeconfig's current-context).
	Context string
}

// register adds --kubeconfig and --context to f, their help after
// prefix (such as "with --check: ").
func (k *kubeTarget) register(f *pflag.FlagSet, prefix string) {
	f.StringVar(&k.Path, "kubeconfig", "", prefix+kubeconfigUsage)
	f.StringVar(&k.Context, "context", "", prefix+"the kubeconfig context to use, as kubectl's --context (default: its current-context)")
}

// restConfig loads --kubeconfig, then $KUBECONFIG and ~/.kube/config, then
// the in-cluster config.
//
// It sets no Timeout: client-go makes rest.Config.Timeout the HTTP client's
// timeout (rest.HTTPClientFor), which covers reading the whole response and
// so would cut every watch (the informers', `loom rollout status --watch`'s)
// after that long; it also sends it as every request's ?timeout=. The
// controller bounds its calls itself instead: a reconcile's with --timeout,
// each request outside reconciles (discovery, rollouts) with a context of
// its own, and every response, watches included, must begin within twice
// --timeout (controller.New).
func restConfig(k kubeTarget) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.Path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.Context}).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, errNoKubeconfig // client-go's says "try setting KUBERNETES_MASTER"
	}
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.UserAgent = "loom"
	return cfg, nil
}

// errNoKubeconfig is restConfig's error when there is no configuration at
// all, outside a pod.
var errNoKubeconfig = errors.New("no kubeconfig: pass --kubeconfig, set $KUBECONFIG, or write ~/.kube/config (in a pod, Loom uses the pod's service account)")

// leaseLock is resourcelock.NewFromKubeconfig for a Lease lock: the same
// request timeout (half renewDeadline, at least a second) and User-Agent,
// with clients from kubeclient instead of a Clientset (whose constructor
// would link every API group's typed client into the binary).
func leaseLock(cfg *rest.Config, ns, name, id string, renewDeadline time.Duration) (resourcelock.Interface, error) {
	c := *cfg
	c.Timeout = max(renewDeadline/2, time.Second)
	kube, err := kubeclient.NewForConfig(rest.AddUserAgent(&c, "leader-election"))
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, ns, name, kube.CoreV1(), kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id})
}

// runAsLeader runs fn while this process holds the leader-election Lease.
// On SIGTERM, fn drains first and the Lease is released after, so the next
// leader never runs beside this one. Losing the Lease ends the process at
// once, for the same reason. leading is set when this process starts to
// lead.
func runAsLeader(ctx context.Context, cfg *rest.Config, o runOptions, leading *atomic.Bool, fn func(context.Context) error) error {
	id, err := os.Hostname()
	if err != nil {
		return err
	}
	id += "_" + string(uuid.NewUUID())
	lock, err := leaseLock(cfg, o.leaseNS, o.leaseName, id, 10*time.Second)
	if err != nil {
		return fmt.Errorf("leader-election lock: %w", err)
	}
	logger := klog.FromContext(ctx)
	// The election outlives ctx until fn has drained; it ends (releasing
	// the Lease) when fn returns, or at once if this process never led.
	electCtx, endElection := context.WithCancel(context.WithoutCancel(ctx))
	defer endElection()
	stopWaiting := context.AfterFunc(ctx, func() {
		if !leading.Load() {
			endElection()
		}
	})
	defer stopWaiting()
	var runErr error
	logger.Info("Waiting to lead", "lease", o.leaseNS+"/"+o.leaseName, "identity", id)
	leaderelection.RunOrDie(electCtx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true, Name: o.leaseName,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				leading.Store(true)
				logger.Info("Leading", "identity", id)
				runCtx, stop := context.WithCancel(leadCtx)
				defer stop()
				defer context.AfterFunc(ctx, stop)()
				runErr = fn(runCtx)
				endElection()
			},
			OnStoppedLeading: func() {
				if electCtx.Err() == nil {
					logger.Info("Lost the leader-election Lease; exiting")
					os.Exit(1)
				}
			},
		},
	})
	return runErr
}

// serveMetrics serves Prometheus metrics and the health probes of p and
// the conversion webhook (see metricsMux).
func serveMetrics(addr string, reg *prometheus.Registry, p prober, standby func() bool, webhook func() error) (*http.Server, error) {
	return serve("metrics", addr, metricsMux(reg, p, standby, webhook))
}

// servePprof serves Go's profiles (heap, CPU, goroutines) on addr.
func servePprof(addr string) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serve("pprof", addr, mux)
}

// serve serves handler on addr in the background; name says which server
// in errors.
func serve(name, addr string, handler http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s listener: %w", name, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, name+" server:", err)
		}
	}()
	return srv, nil
}
