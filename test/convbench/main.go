// Command convbench measures what the conversion webhook of a set of
// several versions costs (issue 35): how long a list of every parent takes
// in a version the API server must convert through Loom's webhook, against
// the same list in the storage version, on the same cluster in one run;
// and the latency of one ConversionReview of 100 parents sent straight to
// Loom's /convert.
//
// It runs bin/loom as its own process with its default flags, save those
// that keep it apart from anything else on the cluster: a copy of the
// shipped set (templates/myresource) under a group of its own, its own
// --loom-namespace (where its certificate Secret goes), ports of its own,
// and --namespace set to an empty namespace, so that it serves
// conversions of the parents without reconciling them. `make
// bench-conversion` runs it on the local cluster. CONVBENCH_PPROF=ADDR has
// Loom serve its pprof profiles there, for profiling only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	kubeconfig  string
	loomBin     string
	set         string
	parents     int
	rounds      int
	reviews     int
	reviewSize  int
	webhookPort int
	metricsPort int
	timeout     time.Duration
	targetRatio float64
}

func parseFlags(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "the cluster's kubeconfig")
	fs.StringVar(&o.loomBin, "loom-bin", "bin/loom", "the loom binary (make build)")
	fs.StringVar(&o.set, "set", "templates/myresource", "the template set of several versions whose copy Loom serves")
	fs.IntVar(&o.parents, "parents", 1000, "parents created in the storage version")
	fs.IntVar(&o.rounds, "rounds", 15, "timed lists in each version, alternating")
	fs.IntVar(&o.reviews, "reviews", 300, "ConversionReviews sent straight to Loom's /convert")
	fs.IntVar(&o.reviewSize, "review-size", 100, "parents in each ConversionReview")
	fs.IntVar(&o.webhookPort, "webhook-port", 9643, "Loom's --webhook-bind-address port (on 127.0.0.1)")
	fs.IntVar(&o.metricsPort, "metrics-port", 8643, "Loom's --metrics-bind-address port (on 127.0.0.1)")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "the whole run's deadline")
	fs.Float64Var(&o.targetRatio, "target-ratio", 2, "the goal: a list through the webhook ÷ one in the storage version, medians")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.kubeconfig == "":
		return o, fmt.Errorf("-kubeconfig (or KUBECONFIG) is required")
	case o.parents < o.reviewSize || o.reviewSize < 1:
		return o, fmt.Errorf("-parents %d: at least -review-size (%d), which is at least 1", o.parents, o.reviewSize)
	case o.rounds < 1 || o.reviews < 1:
		return o, fmt.Errorf("-rounds and -reviews must be at least 1")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "convbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	r, err := run(ctx, o)
	if r != nil {
		r.write(os.Stdout, o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "convbench:", err)
		os.Exit(1)
	}
	if !r.pass(o) {
		os.Exit(1)
	}
}

// logf prints progress to stderr, stamped.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s convbench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}
