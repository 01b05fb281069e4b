// Command converge measures how long Loom takes to converge many parents on
// the local cluster, against a baseline client that sends only the minimal
// writes for the same work.
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
//     - t2: loom: every parent is Ready=True; base: every Deployment is
//     Current by kstatus (available), the test Loom's readiness uses.
//  4. Stop the writer (Loom drains its workers) and delete the namespace.
//
// In a base phase, each parent the creator has created is handed at once to
// one of -workers goroutines, which sends three server-side applies of the
// parent's children (rendered with engine/render before the clock starts;
// only the owner's UID is filled in) and one server-side apply of a status
// of the same shape as Loom's first one. No informers, no rendering, no
// diffing. In a loom phase, Loom runs in this process (controller.New and
// Run, limited to the namespace, Options.Workers = -workers, no resync).
//
// Writes are counted on the writer's own transport (rest.Config.Wrap) and
// split into children, status and Events; the creator's creates and the
// harness's reads are not counted. Both writers get the same QPS and burst
// (-qps, -burst), high enough that client-side throttling never waits.
//
// The report prints t1 and t2 per phase, the ratio of Loom to the mean of
// the baseline phases (PASS or MISS against -target; missing the target
// is not an error), the write requests per parent, per-parent latency, the
// CPU time of each cluster process, the writes the API server served from
// every client (its apiserver_request_total), and, for Loom, its
// reconciles, status writes and workqueue waits. A phase in which
// processes outside the cluster and this one took more than -noise-limit
// of the busy CPU is marked noisy and left out of the ratios.
// -cpuprofile writes Loom's CPU profile for the timed round: FILE for
// t0..t1 and FILE.ready for t1..t2.
//
// The exit status is non-zero only on an error or a timeout (-timeout).
package main
