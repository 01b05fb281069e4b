package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/loom-operator/loom/api/v1alpha1"
)

// rolloutFieldManager names loom rollout in the managedFields of the spec
// fields it writes.
const rolloutFieldManager = "loom-rollout"

// The exit codes of loom rollout status, for a pipeline to gate on. Any
// error (not found, unreachable, bad arguments) exits 1.
const (
	exitRolloutDone    = 0 // Complete
	exitRolloutFailed  = 2 // Failed or RolledBack
	exitRolloutPending = 3 // Progressing or Paused, or --timeout reached
)

// maxReadFailures is how many reads in a row --watch retries before it
// gives up on an API server that stopped answering.
const maxReadFailures = 5

// rolloutOptions holds the flags of loom rollout and what it reaches the
// cluster with.
type rolloutOptions struct {
	kube    kubeTarget
	watch   bool
	timeout time.Duration
	// newClient returns the client for --kubeconfig; tests return a fake.
	newClient func(kube kubeTarget) (dynamic.Interface, error)
	// now stamps resume tokens and ages steps.
	now func() time.Time
	// interval is how often --watch reads the object when it cannot watch.
	interval time.Duration

	templateSets dynamic.ResourceInterface // from newClient, once
}

// newRolloutCommand is loom rollout, reaching the cluster of --kubeconfig.
func newRolloutCommand() *cobra.Command {
	return rolloutCommand(&rolloutOptions{newClient: kubeconfigClient, now: time.Now, interval: time.Second})
}

// kubeconfigClient is a dynamic client for --kubeconfig, then $KUBECONFIG
// and ~/.kube/config, then the in-cluster config.
func kubeconfigClient(kube kubeTarget) (dynamic.Interface, error) {
	cfg, err := restConfig(kube)
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

// rolloutCommand builds loom rollout and its subcommands around o.
func rolloutCommand(o *rolloutOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show and steer the staged rollout of a template set's revisions",
		Long: `A template set with a rollout policy moves a new revision (the candidate) to
its parents step by step. Loom keeps the rollout in the status of the set's
TemplateSet, a cluster-scoped object named after the set's folder (plus
.NAMESPACE for a Loom of one namespace); kubectl get templatesets lists them.
These commands read that status, and write the TemplateSet's spec, which
Loom only reads.

Exit status: pause, resume, promote and abort exit 0 when they wrote the
spec, and 1 when they failed or were used wrongly; status's is in its help.`,
		Example: `  loom rollout status myresource
  loom rollout status myresource --watch --timeout 15m
  loom rollout pause myresource
  loom rollout resume myresource
  loom rollout promote myresource
  loom rollout abort myresource --kubeconfig .cluster/kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	o.kube.register(cmd.PersistentFlags(), "")
	cmd.AddCommand(o.statusCommand(), o.pauseCommand(), o.resumeCommand(),
		o.candidateCommand("promote", "promoted", "Make the candidate revision stable for every parent at once",
			`Promote names the TemplateSet's current candidate revision in spec.promote.
Loom then makes it the stable revision of every parent at once, skipping the
steps left. A candidate that changed since is not promoted: spec.promote
names a revision, and Loom acts only while it is the candidate.`),
		o.candidateCommand("abort", "aborted", "Roll the candidate revision back and reject it",
			`Abort names the TemplateSet's current candidate revision in spec.abort.
Loom then moves every parent back to the stable revision and rejects the
candidate until the templates change again. A candidate that changed since
is not aborted: spec.abort names a revision, and Loom acts only while it is
the candidate.`))
	return cmd
}

// client is the TemplateSet resource of the cluster o names, made once.
func (o *rolloutOptions) client() (dynamic.ResourceInterface, error) {
	if o.templateSets != nil {
		return o.templateSets, nil
	}
	c, err := o.newClient(o.kube)
	if err != nil {
		return nil, err
	}
	o.templateSets = c.Resource(v1alpha1.TemplateSetGVR)
	return o.templateSets, nil
}

// statusCommand is loom rollout status.
func (o *rolloutOptions) statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status SET",
		Short: "Print a TemplateSet's rollout; the exit status says whether it is done",
		Long: `Status prints the rollout of the TemplateSet SET: its phase, the stable and
candidate revisions, the current step and how many parents moved and are
Ready.

With --watch it prints a line each time the phase, the step, the parents
moved or Ready or the message change, until the rollout is Complete, Failed
or RolledBack. It watches the object, and reads it every second when the
API server refuses the watch. --timeout ends the watch.

Exit status: 0 when the phase is Complete; 2 when it is Failed or
RolledBack; 3 when it is Progressing or Paused (not done yet), or when
--timeout ends a watch first; 1 when the command failed (the TemplateSet
does not exist, the cluster cannot be reached, an unknown flag, a missing
argument).`,
		Example: `  loom rollout status myresource
  loom rollout status myresource -w --timeout 10m && echo rolled out`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := o.status(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
			if err != nil || code == exitRolloutDone {
				return err
			}
			cmd.SilenceErrors = true // the output says it
			what := "not complete"
			if code == exitRolloutFailed {
				what = "failed or rolled back"
			}
			return &exitError{code: code, err: fmt.Errorf("templateset/%s: rollout %s", args[0], what)}
		},
	}
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "follow the rollout until it is Complete, Failed or RolledBack")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 0, "with --watch, give up after this long and exit 3 (0: never)")
	return cmd
}

// status prints the rollout of TemplateSet name, or follows it with
// --watch, and returns the exit code its phase calls for.
func (o *rolloutOptions) status(ctx context.Context, out, errOut io.Writer, name string) (int, error) {
	if o.timeout != 0 && !o.watch {
		return 0, errors.New("--timeout needs --watch")
	}
	if o.timeout < 0 {
		return 0, fmt.Errorf("--timeout %s is negative", o.timeout)
	}
	c, err := o.client()
	if err != nil {
		return 0, err
	}
	if !o.watch {
		obj, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return 0, fmt.Errorf("get templateset/%s: %w", name, err)
		}
		ts, err := templateSetOf(obj)
		if err != nil {
			return 0, err
		}
		ts.writeSummary(out, o.now())
		return phaseExitCode(name, ts.Phase)
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	f := &follower{client: c, name: name, out: out, errOut: errOut, interval: o.interval}
	phase, err := f.follow(ctx)
	if err != nil && o.timeout > 0 && errors.Is(err, context.DeadlineExceeded) {
		if !f.seen {
			return 0, fmt.Errorf("get templateset/%s: not read within --timeout %s: %w", name, o.timeout, err)
		}
		fmt.Fprintf(errOut, "timed out after %s waiting for templateset/%s: %s\n", o.timeout, name, f.lastLine)
		return exitRolloutPending, nil
	}
	if err != nil {
		return 0, err
	}
	return phaseExitCode(name, phase)
}

// phaseExitCode is the exit code of a rollout in phase p. No phase yet
// (Loom has not written the status) is not done; an unknown one is an
// error.
func phaseExitCode(name string, p v1alpha1.Phase) (int, error) {
	switch p {
	case v1alpha1.PhaseComplete:
		return exitRolloutDone, nil
	case v1alpha1.PhaseFailed, v1alpha1.PhaseRolledBack:
		return exitRolloutFailed, nil
	case v1alpha1.PhaseProgressing, v1alpha1.PhasePaused, "":
		return exitRolloutPending, nil
	}
	return 0, fmt.Errorf("templateset/%s: unknown phase %q", name, p)
}

// done reports whether a watch ends at phase p.
func done(p v1alpha1.Phase) bool {
	return p == v1alpha1.PhaseComplete || p == v1alpha1.PhaseFailed || p == v1alpha1.PhaseRolledBack
}

// templateSet is what loom rollout shows of a TemplateSet: its status,
// as Loom wrote it.
type templateSet struct {
	v1alpha1.TemplateSetStatus
	Name string
	// Paused is spec.paused: asked for, whether or not Loom acted yet.
	Paused bool
}

// templateSetOf reads a TemplateSet. One that does not read as a
// TemplateSet is an error naming it.
func templateSetOf(obj *unstructured.Unstructured) (templateSet, error) {
	ts, err := v1alpha1.TemplateSetFromUnstructured(obj)
	if err != nil {
		return templateSet{Name: obj.GetName()}, err
	}
	return templateSet{TemplateSetStatus: ts.Status, Name: ts.Name, Paused: ts.Spec.Paused}, nil
}

// writeSummary prints the rollout for a person, a field a line.
func (ts templateSet) writeSummary(w io.Writer, now time.Time) {
	fmt.Fprintf(w, "TemplateSet %s", ts.Name)
	switch {
	case ts.Set != "" && ts.ParentKind != "":
		fmt.Fprintf(w, " (set %s, parents %s)", ts.Set, ts.ParentKind)
	case ts.Set != "":
		fmt.Fprintf(w, " (set %s)", ts.Set)
	case ts.ParentKind != "":
		fmt.Fprintf(w, " (parents %s)", ts.ParentKind)
	}
	fmt.Fprintln(w)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-11s"+format+"\n", append([]any{label + ":"}, args...)...)
	}
	if ts.Phase == "" {
		line("phase", "none yet (Loom has not written this TemplateSet's status)")
	} else {
		line("phase", "%s", ts.Phase)
	}
	line("stable", "%s", orNone(ts.StableRevision))
	switch {
	case ts.CandidateRevision == "":
		line("candidate", "none")
	case ts.StepStartedAt != nil:
		line("candidate", "%s   step %d of %d, started %s ago", ts.CandidateRevision, ts.Step, ts.Steps,
			now.Sub(ts.StepStartedAt.Time).Round(time.Second))
	default:
		line("candidate", "%s   step %d of %d", ts.CandidateRevision, ts.Step, ts.Steps)
	}
	line("parents", "%d total, %d moved, %d ready", ts.Parents.Total, ts.Parents.Moved, ts.Parents.Ready)
	if ts.FailedParent != "" {
		line("failed", "%s", ts.FailedParent)
	}
	if ts.RejectedRevision != "" {
		line("rejected", "%s", ts.RejectedRevision)
	}
	if ts.Paused {
		line("paused", "yes (spec.paused; loom rollout resume %s goes on)", ts.Name)
	}
	if ts.Message != "" {
		line("message", "%s", ts.Message)
	}
}

// orNone is s, or "none" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// progress is what --watch prints a line for when it changes.
type progress struct {
	phase        v1alpha1.Phase
	step         int
	moved, ready int
	message      string
}

// progressLine is one --watch line.
func (ts templateSet) progressLine() string {
	phase := string(ts.Phase)
	if phase == "" {
		phase = "(none yet)"
	}
	s := "phase " + phase
	if ts.Step > 0 {
		s += fmt.Sprintf(", step %d of %d", ts.Step, ts.Steps)
	}
	s += fmt.Sprintf(", %d of %d parents moved, %d ready", ts.Parents.Moved, ts.Parents.Total, ts.Parents.Ready)
	if ts.Message != "" {
		s += ": " + ts.Message
	}
	return s
}

// follower follows one TemplateSet until its rollout is over, printing a
// line for each change.
type follower struct {
	client      dynamic.ResourceInterface
	name        string
	out, errOut io.Writer
	interval    time.Duration
	seen        bool     // whether it read the object once
	last        progress // what the last line printed
	lastLine    string
}

// follow prints the rollout's progress until its phase is Complete, Failed
// or RolledBack, and returns that phase. It watches the object from each
// read; when the API server refuses the watch it reads the object every
// interval instead. It returns ctx's error when ctx ends first.
func (f *follower) follow(ctx context.Context) (v1alpha1.Phase, error) {
	watching := true
	failures := 0
	for {
		obj, err := f.client.Get(ctx, f.name, metav1.GetOptions{})
		switch {
		case ctx.Err() != nil:
			return "", ctx.Err()
		case err != nil:
			failures++
			if !f.seen || apierrors.IsNotFound(err) || failures > maxReadFailures {
				return "", fmt.Errorf("get templateset/%s: %w", f.name, err)
			}
			fmt.Fprintf(f.errOut, "get templateset/%s: %v (retrying)\n", f.name, err)
		default:
			failures = 0
			phase, over, err := f.observe(obj)
			if over || err != nil {
				return phase, err
			}
			if !watching {
				break
			}
			phase, over, err = f.watch(ctx, obj.GetResourceVersion())
			var unavailable *watchUnavailableError
			switch {
			case errors.As(err, &unavailable):
				watching = false
				fmt.Fprintf(f.errOut, "%v; reading it every %s instead\n", err, f.interval)
			case over || err != nil:
				return phase, err
			}
		}
		select { // the watch ended or could not start, or a read failed
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(f.interval):
		}
	}
}

// watchUnavailableError is a watch the API server refused.
type watchUnavailableError struct {
	name string
	err  error
}

// Error names the TemplateSet and the API server's answer.
func (e *watchUnavailableError) Error() string {
	return fmt.Sprintf("watch templateset/%s: %v", e.name, e.err)
}

// Unwrap is the API server's answer.
func (e *watchUnavailableError) Unwrap() error { return e.err }

// watch follows the object from resourceVersion rv until the rollout is
// over, the watch ends (over false, no error: read again) or ctx ends.
func (f *follower) watch(ctx context.Context, rv string) (v1alpha1.Phase, bool, error) {
	w, err := f.client.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", f.name).String(),
		ResourceVersion: rv,
	})
	if ctx.Err() != nil {
		return "", false, ctx.Err()
	}
	if err != nil {
		return "", false, &watchUnavailableError{name: f.name, err: err}
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return "", false, nil
			}
			obj, isObj := ev.Object.(*unstructured.Unstructured)
			switch {
			case ev.Type == watch.Error:
				// Most often 410 Gone, rv too old: read again, watch from there.
				return "", false, nil
			case !isObj || obj.GetName() != f.name:
				continue
			case ev.Type == watch.Deleted:
				return "", false, nil // a read says whether it is back
			case ev.Type == watch.Added || ev.Type == watch.Modified:
				if phase, over, err := f.observe(obj); over || err != nil {
					return phase, over, err
				}
			}
		}
	}
}

// observe prints a line if the rollout changed since the last one, and
// reports its phase and whether the rollout is over.
func (f *follower) observe(obj *unstructured.Unstructured) (v1alpha1.Phase, bool, error) {
	ts, err := templateSetOf(obj)
	if err != nil {
		return "", false, err
	}
	if _, err := phaseExitCode(f.name, ts.Phase); err != nil {
		return "", false, err
	}
	p := progress{phase: ts.Phase, step: ts.Step, moved: ts.Parents.Moved, ready: ts.Parents.Ready, message: ts.Message}
	if !f.seen || p != f.last {
		f.lastLine = ts.progressLine()
		fmt.Fprintln(f.out, f.lastLine)
	}
	f.seen, f.last = true, p
	return ts.Phase, done(ts.Phase), nil
}

// pauseCommand is loom rollout pause.
func (o *rolloutOptions) pauseCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "pause SET",
		Short: "Stop a template set's rollout from taking its next step",
		Long: `Pause sets spec.paused on the TemplateSet SET. Loom then takes no further
step: parents already moved stay on the candidate, the others on the stable
revision. A step's timeout and soak count again from the resume.

` + exitStatusPlain,
		Example: `  loom rollout pause myresource`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.patchSpec(cmd.Context(), args[0], map[string]any{"paused": true}); err != nil {
				return fmt.Errorf("pause templateset/%s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "templateset/%s paused\n", args[0])
			return nil
		},
	}
}

// resumeCommand is loom rollout resume.
func (o *rolloutOptions) resumeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "resume SET",
		Short: "Let a paused rollout go on, and retry a step that failed",
		Long: `Resume clears spec.paused on the TemplateSet SET and writes a new token (the
time) in spec.resume. The new token makes Loom retry a step that failed
with onFailure: pause.

` + exitStatusPlain,
		Example: `  loom rollout resume myresource`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec := map[string]any{"paused": false, "resume": o.now().UTC().Format(time.RFC3339Nano)}
			if err := o.patchSpec(cmd.Context(), args[0], spec); err != nil {
				return fmt.Errorf("resume templateset/%s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "templateset/%s resumed\n", args[0])
			return nil
		},
	}
}

// candidateCommand is promote or abort: verb names the spec field that
// receives the candidate revision, and past says it was done.
func (o *rolloutOptions) candidateCommand(verb, past, short, long string) *cobra.Command {
	return &cobra.Command{
		Use:     verb + " SET",
		Short:   short,
		Long:    long + "\n\n" + exitStatusPlain,
		Example: fmt.Sprintf("  loom rollout %s myresource", verb),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rev, err := o.candidate(cmd.Context(), verb, args[0])
			if err != nil {
				return err
			}
			if err := o.patchSpec(cmd.Context(), args[0], map[string]any{verb: rev}); err != nil {
				return fmt.Errorf("%s templateset/%s: %w", verb, args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "templateset/%s: candidate %s %s\n", args[0], rev, past)
			return nil
		},
	}
}

// candidate is the candidate revision of TemplateSet name; an error when
// it has none to promote or abort (verb).
func (o *rolloutOptions) candidate(ctx context.Context, verb, name string) (string, error) {
	c, err := o.client()
	if err != nil {
		return "", err
	}
	obj, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get templateset/%s: %w", name, err)
	}
	ts, err := templateSetOf(obj)
	if err != nil {
		return "", err
	}
	if ts.CandidateRevision == "" {
		return "", fmt.Errorf("templateset/%s: no candidate to %s: phase %s", name, verb, orNone(string(ts.Phase)))
	}
	return ts.CandidateRevision, nil
}

// patchSpec merge-patches fields into TemplateSet name's spec.
func (o *rolloutOptions) patchSpec(ctx context.Context, name string, spec map[string]any) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	_, err = c.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: rolloutFieldManager})
	return err
}
