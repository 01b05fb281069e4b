// Command converge measures how long Loom takes to converge many parents on
// the local cluster, against a baseline client that sends only the minimal
// writes for the same work, and how much memory Loom's process needs.
//
//	go run ./test/converge -parents 1000 -workers 8
//
// The run is a sequence of phases (-phases, default base,loom,base), one
// after the other on the same API server, each in a namespace of its own
// (bench-base-*, bench-loom-*) that is deleted, and waited for, before the
// next phase starts. Every phase has the same shape:
//
//  0. Wait (up to -quiet) until the machine has been mostly idle for three
//     seconds: the last phase's garbage collection, or someone else's
//     tests, must not run into this one.
//  1. Create the namespace and start the harness's own informers on
//     MyResources and Deployments there (they are how the clock stops).
//  2. Warm up with one parent ("warmup"), and wait until its Deployment is
//     available (loom: until it is Ready=True). For Loom this starts the
//     parent and child informers and fills the discovery cache, so that the
//     timed round measures a running operator, not its start.
//  3. The timed round. The clock starts, then the creator creates the
//     parents (-workers at a time), and the clock runs until:
//     - t1: every parent has status.observedGeneration == metadata.generation
//     and three entries in status.children: children applied, status written;
//     - t2: loom: every parent Ready=True; base: every Deployment is
//     Current by kstatus (available), the test Loom's readiness uses.
//  4. Loom only, once converged: the steady state, a full re-reconcile,
//     and two restarts (below).
//  5. Stop the writer (Loom drains its workers) and delete the namespace.
//
// In a base phase, each parent the creator has created is handed at once to
// one of -workers goroutines, which sends three server-side applies of the
// parent's children (rendered with engine/render before the clock starts;
// only the owner's UID is filled in) and one server-side apply of a status
// of the same shape as Loom's first one. No informers, no rendering, no
// diffing. The baseline's writes are counted on its own transport
// (rest.Config.Wrap) and split into children, status and Events; the
// creator's creates and the harness's reads are not counted. The baseline
// and the creator get the same QPS and burst (-qps, -burst), high enough
// that client-side throttling never waits.
//
// # How a loom phase runs Loom (-loom-mode)
//
// process (the default) runs Loom as users do: `bin/loom run` (-loom-bin;
// make build builds it) in a process of its own, with its default flags,
// plus -loom-args if given. Its working folder is a fresh temporary folder
// holding a copy of -templates as templates/ (the default of --templates),
// and KUBECONFIG is in its environment. Loom then watches every namespace
// (the earlier phases' are gone, or emptied on a bare cluster) with its own
// --workers and --kube-api-qps, which may differ from the baseline's. Its
// output goes to loom.log in that folder, whose tail is printed if the
// phase fails (the folder is then kept); it is stopped with SIGTERM at the
// end of the phase, and SIGKILL 60 s later. Its counters (reconciles,
// status writes, child applies, reconcile time, heap in use) are scraped
// from its /metrics on --metrics-bind-address (default :8080, read at
// 127.0.0.1); the port being taken before the first phase, or when Loom
// starts, is an error that names it (-port-wait waits for it first, on a
// shared machine; make's CONVERGE_EXTRA passes such flags). Its writes are the API server's (apiserver_request_total): the
// API server counts by resource, not by client (Loom's user agent,
// "loom", is in no metric), so Loom's writes are those to the children's
// resources and to the parents' status, which nothing else writes while a
// round runs. Events cannot be told from the controller-manager's, and
// are shown as ?. Loom's workqueue metrics are not on its /metrics.
//
// Its memory comes from /proc/PID/status, sampled every 250 ms: the peak
// RSS (VmHWM) at the end of the timed round and at the end of the phase;
// the steady RSS (VmRSS, with its anonymous and file-backed parts) and the
// heap in use (go_memstats_heap_inuse_bytes) once the fleet has converged
// and Loom has reconciled nothing for -steady; and its CPU seconds
// (utime+stime of /proc/PID/stat) over the timed round, in the CPU table
// as "loom".
//
// inprocess runs Loom's Manager in this process (controller.New and Run,
// limited to the namespace, Options.Workers = -workers, no resync, the
// same QPS as the baseline), with its requests counted on its transport
// like the baseline's. Only this mode can profile Loom: -cpuprofile writes
// its CPU profile for the timed round (FILE for t0..t1, FILE.ready for
// t1..t2), -memprofile the heap profile after it; the report gives this
// process's live heap instead of an RSS.
//
// # Full re-reconcile
//
// Once the fleet has converged, and after the steady sample, the harness
// appends a template comment ({{/* bench touch */}} on its own line) to a
// child template of the MyResource set in Loom's copy of the templates.
// That changes the set's files but not what it renders: Loom's template
// watcher reloads the set (a reload whose files are unchanged is skipped)
// and reconciles every parent of it. The harness waits until
// loom_reconcile_total has grown by at least the number of parents (up to
// -touch-timeout), lets -settle pass, and reports the writes the API
// server saw to the children and to the parents' status in that window.
// There should be none; a write is reported, not an error.
//
// # Restart
//
// After the re-reconcile (-restart, on by default; process mode, one
// unsharded Loom), the harness restarts Loom as an operator would: it
// sends SIGTERM, waits for the process to exit, and starts a fresh `loom
// run` with the same arguments, in the same working folder (its log goes
// on in the same file, after a marker line) and on the same ports; then
// once more with SIGKILL instead of SIGTERM. Before each signal it reads
// the API server's request rate over -restart-settle, while the fleet is
// idle. From the new process's start it polls /readyz (loom run serves
// the health probes on its metrics address) until it answers 200, and
// Loom's metrics until loom_reconcile_total reaches the parents, and it
// reads the API server's apiserver_request_total every second until Loom
// is idle: every parent reconciled, then neither a write to the children's
// resources or the parents' status nor a reconcile for -restart-settle
// (up to -restart-timeout). The Restart section of the report gives, per
// signal, the time from the signal to the old process's exit, from the new
// process's start to Ready, to every parent reconciled and to idle; the
// child, status and Event writes the API server saw from the signal to
// idle; its requests per second of every verb and client over that window
// (and its largest one-second rate, and its rate before the signal); and
// the new process's own apply counts, CPU and RSS at idle. A restart needs
// no write: Loom proves a child unchanged from the managedFields entry the
// API server holds (engine/apply/expect.go), so the targets are 0 child
// and 0 status writes, and Ready within -target-restart-ready (10 s, the
// goal at 1 000 parents). An in-process Loom, and a sharded phase's
// replicas, whose takeovers are measured on their own, are not restarted:
// the section says n/a.
//
// # A bare cluster (-bare)
//
// `make bench-scale` runs 10 000 parents on a cluster of etcd and
// kube-apiserver only (hack/cluster/cluster.sh with CLUSTER_COMPONENTS,
// in .cluster-scale on ports of its own). With no controller-manager there
// is no garbage collector and no namespace controller: no Deployment ever
// becomes available, and a deleted namespace never goes. With -bare, t2 is
// not measured (t1 is, and Loom reaches it: it needs no controller), and
// a phase's cleanup deletes its parents and then every Deployment, Service
// and ConfigMap in the namespace (DeleteCollection), waits until they are
// gone, and leaves the empty namespace. The t1 target is then 1.2 unless
// -target is given. Only Loom and the baseline write Events there, so they
// are counted.
//
// # Phases of their own size, and sharded replicas
//
// An entry of -phases may say its own size and Loom: KIND[/R][@N]. @N
// creates N parents in the phase's timed round instead of -parents; /R
// (loom only) runs R processes of `bin/loom run` instead of -loom-replicas
// (default 1). One process runs exactly as above. Several run each with
// --sharded (so do all of them when -loom-args has --sharded), and share
// the 64 buckets of parent UIDs through Leases in --shard-namespace
// (default loom-system; the harness creates it if missing). Replica i
// (from 0) gets every --*-bind-address of -loom-args with its port plus i,
// and --metrics-bind-address :8080+i when -loom-args leave it at its
// default (the health probes are served there too); the replicas share one
// working folder, so one templates/ (a touch reaches them all), and log to
// loom-1.log, loom-2.log, ... there. Before the warm-up, the harness waits
// (up to -balance-timeout) until the replicas hold all 64 buckets between
// them, each within one of the others (the sum alone is 64 as soon as the
// first replica to start has claimed them all), and the report says how
// many they held at t1 and at the end of the timed round, and how many
// buckets moved meanwhile. Their counters are added up wherever the report
// speaks of Loom (reconciles, writes, the re-reconcile; the CPU table's
// "loom"); memory is per replica: a table of each one's peak RSS, steady
// RSS, heap in use, buckets and parents held (loom_parents), with their
// largest and their sum, and Loom's memory lines and targets are the
// largest replica's.
//
// Replica i gets --shard-id-prefix converge-<i+1> and --shard-namespace
// loom-system unless -loom-args set them; -loom-namespace gives every
// Loom the phase's namespace as --namespace, for a cluster that others'
// tests use too (by default Loom watches every namespace).
//
// # Takeovers of a sharded phase (-handover, handover.go)
//
// Once a sharded phase has converged (after the re-reconcile below), the
// harness stops its first replica with SIGTERM and, at once, edits
// spec.replicas (one more than -replicas) of the parents of the buckets
// the replica held (the table Lease names them; at most -handover-edits,
// spread over them). It times, from the signal: the last edit returned,
// the process ended, the table named the replica for none of its buckets
// (released), the others held them all (claimed), and every edited
// parent's Deployment carried the edit (its informer saw it; the target
// is 5 s). It counts the writes from the signal until -settle after:
// Loom's own child applies that wrote (created or configured, from the
// replicas' loom_child_changes_total), which should be one Deployment per
// edited parent and no more (target 0 beyond), and the API server's to
// the children and the parents' status from every client. Then it starts
// the replica again (its log is loom-1-after-sigterm.log), waits until the
// buckets are balanced, and counts the writes of that rebalance (target 0).
// Then the same with SIGKILL, whose target is the Lease duration
// (--shard-lease-duration of -loom-args, default 6 s) plus 5 s. The report
// has a table of both takeovers and their rows in the targets table.
//
// When a run has both one unsharded Loom and sharded replicas, the report
// divides each replica's peak RSS by the unsharded phase's (the mean of
// them if several) against -target-shard-rss, and compares their t1.
// `make bench-shard` is such a run on the bare cluster: loom@10000 then
// loom/3@30000 (SHARD_BASE_PARENTS, SHARD_REPLICAS, SHARD_PARENTS), in one
// invocation, so that both peaks are in one report and the second phase
// starts on the cluster the first one has emptied.
//
// # Children in two clusters (remote phases, remote.go)
//
// A -phases entry "remote" (remote[/R][@N]) is a loom phase whose
// parents have children in two clusters: its Loom runs -remote-templates
// (test/converge/testdata/remote: the shipped MyResource set with its
// ConfigMap annotated loom.dev/cluster: workload, which its loom.yaml
// allows), so that each parent's ConfigMap goes to the workload cluster
// of -workload-kubeconfig (default $LOOM_E2E_WORKLOAD_KUBECONFIG, then
// .cluster-workload/kubeconfig if it exists; a remote phase without one
// fails at flag parsing, as does one in inprocess mode) and its
// Deployment and Service stay local. Its namespace is bench-remote-*.
// Before Loom starts, the phase registers the workload cluster as
// `loom cluster add` does: a Secret named workload, labelled
// loom.dev/cluster=workload, holding the kubeconfig, in Loom's namespace
// (--loom-namespace of -loom-args, else loom-system; created if missing
// and left in place), and creates a namespace of the same name in the
// workload cluster. At its end, while Loom still runs, it deletes the
// parents and waits (up to -delete-timeout) until they are gone: Loom
// holds each with a finalizer until its children in the workload
// cluster are deleted. Once Loom has stopped it removes the finalizers
// of any parent left, cleans up the local namespace as any phase does,
// then deletes every ConfigMap, Deployment and Service in the workload
// cluster's namespace, the namespace (finalizing it: the workload
// cluster is bare, with no namespace controller) and the Secret.
//
// The workload cluster's apiserver_request_total is read with the local
// one's (at t0, t1, t2 and end, and around the touch); its children's
// writes count as Loom's. When a run has both remote phases and loom
// phases of one unsharded Loom, the report compares them (each side the
// mean of its phases): the time to Ready (t2; t1 on a bare cluster) and
// the peak RSS, two clusters divided by one, against -target-remote-time
// and -target-remote-rss (1.3 each), in its own section and in the
// targets table; the section says where the time goes: each phase's
// Loom CPU, reconciles per parent and their mean time, and the requests
// (all verbs, writes in brackets) each API server served until then.
// Remote phases are left out of the ratios to the baseline (which writes
// every child in one cluster) and of the sharded comparison. `make
// bench-clusters` runs loom@1000,remote@1000 on the full local cluster
// and the workload cluster.
//
// # Idle (-idle)
//
// In process mode, before the first phase, the harness starts `bin/loom
// run` with its default flags and -loom-args plus --namespace
// converge-idle, a namespace no phase creates, so that it holds nothing;
// reads its RSS (and its anonymous and file-backed parts) from /proc after
// -idle (default 20 s; 0 skips the step); and stops it. It then builds
// -floor (./test/converge/floor) with go build and does the same with it:
// the smallest program on Loom's run-time stack, idle. The report prints
// both and their difference, and the targets table holds Loom's idle RSS
// against -target-idle-rss (35 MiB).
//
// # The report
//
// The report starts with the machine (nproc, CPU model, memory) and the
// date, then prints t1 and t2 per phase, the ratio of Loom to the mean of
// the baseline phases (PASS or MISS against -target and -target-ready;
// missing a target is not an error), the write requests per parent,
// Loom's memory, per-parent latency, the CPU time of each cluster process
// and of Loom, the writes the API server served from every client (its
// apiserver_request_total), Loom's reconciles, status writes and (in
// inprocess mode) workqueue waits, the full re-reconcile, and the restarts.
// It ends with one table of the targets: peak RSS (≤ -target-rss MiB),
// steady RSS, heap in use, Loom's CPU, t1 and t2 against the floor, the
// writes of the full re-reconcile (0), and after a restart the child
// writes (0), the status writes (0) and the time to Ready (≤
// -target-restart-ready), the worst of both restarts, and the idle RSS
// (≤ -target-idle-rss MiB). A phase in which processes outside the cluster,
// Loom and this one took more than -noise-limit of the busy CPU is marked
// noisy and left out of the ratios.
//
// The exit status is non-zero only on an error or a timeout (-timeout).
package main
