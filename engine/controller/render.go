package controller

// Rendering a parent's children and its status template, each bounded by
// half the reconcile timeout.

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/reader"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
)

// render renders parent's children with lookups answered by reader, and
// decides which wait (engine/pipeline, as `loom render`, `loom test` and
// `loom diff` do). A file that failed although every child it read is
// ready is a render error.
//
// A render stops after half the reconcile timeout (renderDeadline), so
// that a template that loops for ever frees its worker and leaves time
// to say so in the parent's status; the error names the loop's line.
//
// Between the render and the decision, in this order: generated keys and
// certificates are kept before any child holds them (a restart after the
// apply must render them again), the seed is marked, and on a sharded
// replica each child is labelled with its parent's bucket. A set that may
// place children in workload clusters (loom.yaml's clusters) renders with
// the registered clusters, once the registry has read them.
func (c *Controller) render(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, lookups *reader.Reader) (*pipeline.Result, error) {
	hooks := []pipeline.Hook{
		func(parent *unstructured.Unstructured, out *render.Output) error {
			if len(out.Generated) == 0 {
				return nil
			}
			return lookups.Keep(parent, out.Generated)
		},
		func(parent *unstructured.Unstructured, _ *render.Output) error {
			return c.markSeed(ctx, lookups, parent)
		},
	}
	if c.sh != nil && c.sh.Shard != nil {
		hooks = append(hooks, func(parent *unstructured.Unstructured, out *render.Output) error {
			labelBucket(out.Children, parent.GetUID())
			return nil
		})
	}
	d, cause := c.renderDeadline()
	opts := pipeline.Options{Timeout: d, TimeoutCause: cause, Hooks: hooks}
	if set.Config.Clusters != nil && c.sh != nil && c.sh.Clusters != nil {
		regs, err := c.sh.Clusters.Registrations(ctx)
		if err != nil {
			return nil, lookups.Fail(err) // retried, as a lookup the cluster did not answer
		}
		opts.Clusters = regs
	}
	return pipeline.Plan(ctx, set, parent, lookups, opts)
}

// renderContext bounds one render of the status template by
// renderDeadline.
func (c *Controller) renderContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d, cause := c.renderDeadline()
	return context.WithTimeoutCause(ctx, d, cause)
}

// renderDeadline is how long one render (of the children or of the
// status template) may run: half the reconcile timeout, the rest being
// for the status that reports it. cause is what a render it stops gives.
func (c *Controller) renderDeadline() (d time.Duration, cause error) {
	d = c.sh.ReconcileTimeout / 2
	return d, fmt.Errorf("it ran for %s, half the reconcile timeout (loom run --reconcile-timeout)", d)
}

// renderStatusExtra renders the set's status template, if it has one, over
// the parent and its children: each child as Loom applied it, with its live
// metadata and status (see childcache.View).
func (c *Controller) renderStatusExtra(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured, lookups *reader.Reader) (map[string]any, error) {
	if !set.HasStatus() {
		return nil, nil
	}
	children := make([]*unstructured.Unstructured, 0, len(rendered))
	for _, r := range rendered {
		if l := live[object.RefOf(r)]; l != nil {
			children = append(children, childcache.View(r, l))
		}
	}
	rctx, cancel := c.renderContext(ctx)
	defer cancel()
	extra, _, err := set.RenderStatusWith(rctx, parent, children, lookups)
	return extra, err
}
