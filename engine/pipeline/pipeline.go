package pipeline

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/depend"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/render/placement"
)

// Hook is a step a caller takes on a render's output before the plan is
// decided, such as the controller keeping the generated keys in the
// parent's seed Secret before any child holds them. It may change out's
// children in place; an error stops the plan.
type Hook func(parent *unstructured.Unstructured, out *render.Output) error

// Options are how Plan renders one parent.
type Options struct {
	// Timeout stops the render after this long (0: no limit), so that a
	// template that loops for ever fails at the loop's line
	// (render.ErrDeadline) instead of holding its caller.
	Timeout time.Duration
	// TimeoutCause is the cause a render stopped by Timeout gives
	// (context.Cause): it names the setting that gives the timeout, such
	// as "it ran for 30s (--timeout)".
	TimeoutCause error
	// Hooks run in order on the render's output, after the render and
	// before the dependency decision; the first that fails stops the
	// plan.
	Hooks []Hook
	// Clusters are the registered workload clusters (the controller's
	// registry; offline, the registration Secrets of the lookups file).
	// The render sees those the set's loom.yaml allows as .Clusters, and
	// refuses a child aimed at any other (see render.Set.RenderPlaced).
	// None: every child must go to the cluster Loom runs in.
	Clusters []cluster.Registration
}

// Result is the plan for one parent.
type Result struct {
	// Output is what the render made: every child (those held too), the
	// lookups it read, a chart set's release, hooks and notes.
	Output *render.Output
	// Plan is which of Output's children are applied now and which wait,
	// with the waits and cycles the parent's status reports, and whether
	// the render is complete enough to prune by. Its Err is nil.
	Plan depend.Plan
}

// Plan renders parent with set, answering its lookups from reader (nil:
// they find nothing), with the workload clusters o.Clusters that the set
// may use, runs o.Hooks on the output, and decides with
// loom.yaml's readiness rules which children wait for others they looked
// up (depend.Decide).
//
// An error is the render's, a hook's, or that of a file that failed
// although every child it looked up is ready; it is returned as is, for
// the caller to name the parent its own way (the controller's status
// reports it unwrapped).
func Plan(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, reader render.Reader, o Options) (*Result, error) {
	out, err := renderParent(ctx, set, parent, reader, o)
	if err != nil {
		return nil, err
	}
	for _, h := range o.Hooks {
		if err := h(parent, out); err != nil {
			return nil, err
		}
	}
	plan := depend.Decide(out, set.Config.Readiness)
	if plan.Err != nil {
		return nil, plan.Err
	}
	return &Result{Output: out, Plan: plan}, nil
}

// renderParent renders parent, stopping after o.Timeout (0: no limit).
func renderParent(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, reader render.Reader, o Options) (*render.Output, error) {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, o.TimeoutCause)
		defer cancel()
	}
	clusters, err := placement.New(o.Clusters, set.Config.Clusters)
	if err != nil {
		return nil, &render.Error{File: config.File, Err: err}
	}
	return set.RenderPlaced(ctx, parent, reader, clusters)
}

// Describe says, one line each, what plan holds back and why: each
// waiting document or file ("waiting: ConfigMap web-config waits for
// Deployment web: not found yet") and each dependency cycle, followed by
// parent in parentheses.
func Describe(plan depend.Plan, parent string) []string {
	var out []string
	for _, w := range plan.Waits {
		out = append(out, fmt.Sprintf("waiting: %s (%s)", w.Message, parent))
	}
	for _, c := range plan.Cycles {
		out = append(out, fmt.Sprintf("%s (%s)", c, parent))
	}
	return out
}
