package controller

import (
	"context"
	"errors"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/clusters"
	"github.com/loom-operator/loom/engine/controller/hookrun"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/controller/reader"
	"github.com/loom-operator/loom/engine/controller/statuswriter"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// reconcile makes one parent's children match its templates and writes its
// status. It returns an error only for failures worth retrying with
// backoff; a broken template or spec is reported in the status and waits
// for the spec or the template to change.
//
// It runs five steps, each returning what the next needs: begin (which
// revision, the lookup reader, the ServiceAccount), planChildren (render
// and decide what waits), applyChildren, pruneChildren and report (the
// status). A parent that is gone or going is finalized instead (gone).
//
// parent is the object of key as the worker read it from the cache (nil
// when it is gone), the very object whose shard gate the worker entered.
func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName, parent *unstructured.Unstructured) error {
	if parent == nil || parent.GetDeletionTimestamp() != nil {
		return c.gone(ctx, key, parent)
	}
	if s := c.suspension(parent); s != nil {
		return c.suspended(ctx, key, parent, s)
	}
	ctx, a, err := c.begin(ctx, key, parent)
	if a == nil {
		return err
	}
	defer a.reader.Done()
	planned, err := c.planChildren(ctx, a)
	if planned == nil {
		return err
	}
	ap := c.applyChildren(ctx, a, planned)
	if ap.terminating {
		return nil
	}
	pruneErr := c.pruneChildren(ctx, a, ap)
	if err := c.report(ctx, a, ap); err != nil {
		return err
	}
	return errors.Join(ap.results.Retryable(), pruneErr, a.reader.Err())
}

// attempt is what one reconcile of a parent works with, from begin on.
type attempt struct {
	key cache.ObjectName
	// parent is as the cache holds it, in the storage version; hub is it
	// in the version the templates read, and how their status goes back.
	parent *unstructured.Unstructured
	hub    statuswriter.Hub
	// set is the template set of the parent's revision.
	set      *render.Set
	revision string
	// reader answers the templates' lookups, as the set's ServiceAccount
	// if it names one.
	reader *reader.Reader
	// hooks is the run of a chart's hooks (nil: none), from planChildren.
	hooks *hookrun.Run
}

// applied is what applyChildren left: the plan of its last pass, the
// parent as the finalizer patches left it, the last pass's results (with
// the prune's, after pruneChildren), every write of the reconcile, and the
// best-known live object of each child.
type applied struct {
	*pipeline.Result
	owner       *unstructured.Unstructured
	results     object.ChangeSet
	all         object.ChangeSet
	live        map[object.Ref]*unstructured.Unstructured
	terminating bool // an apply met the namespace being deleted
	// unreachable are the workload clusters that did not answer: no
	// prune there, and the parent says so.
	unreachable map[string]error
}

// gone handles a parent that is gone (nothing to do) or going: its
// children to keep are released and its cluster-scoped children deleted,
// if it has any (finalize.go).
func (c *Controller) gone(ctx context.Context, key cache.ObjectName, parent *unstructured.Unstructured) error {
	c.setUnserved(key, false)
	if parent != nil {
		return c.finalize(ctx, parent)
	}
	return nil
}

// begin is step 1: which revision of the set the parent renders, the
// parent in the version its templates read (the hub), the
// reader of its lookups, and the set's ServiceAccount that applies,
// prunes and looks up for it (actas.go), which the returned ctx carries.
// A nil attempt means the reconcile ends here, with the error returned.
func (c *Controller) begin(ctx context.Context, key cache.ObjectName, parent *unstructured.Unstructured) (context.Context, *attempt, error) {
	logger := klog.FromContext(ctx)
	set, revision := c.setFor(parent)
	if set == nil {
		// The set's rollout state is not loaded: which revision this
		// parent renders is unknown, so it renders nothing. When the
		// state is unavailable, the parent says why; the first decision
		// that succeeds reconciles every parent.
		if err := c.rollouts.Why(); err != nil {
			logger.V(2).Info("The set's rollout state is unavailable", "err", err)
			rev, _, _ := unstructured.NestedString(parent.Object, "status", "templateRevision")
			return ctx, nil, c.status.Write(ctx, c.set.Load(), parent, statuswriter.Hub{}, status.Input{RolloutErr: err, Revision: rev})
		}
		logger.V(2).Info("Waiting for the set's rollout state")
		c.queue.AddAfter(key, 2*time.Second)
		return ctx, nil, nil
	}
	// The templates read the hub: a parent that cannot be converted waits
	// for its spec or the set to change.
	hub := statuswriter.Hub{Converter: pipeline.ConverterOf(set)}
	if c.sh.Converter != nil {
		hub.Converter = c.sh.Converter(set)
	}
	var err error
	if hub.Parent, err = pipeline.ToVersion(hub.Converter, parent, set.ParentGVK().Version); err != nil {
		logger.V(2).Info("Cannot convert the parent to its templates' version", "err", err)
		return ctx, nil, c.status.Write(ctx, set, parent, statuswriter.Hub{}, status.Input{RenderErr: err, Revision: revision})
	}
	lookups := c.reader(ctx, childcache.ParentKey{GroupKind: c.gvk.GroupKind(), Name: key}, set)
	id, idErr := c.identityFor(ctx, set, parent, lookups)
	if idErr != nil {
		defer lookups.Done()
		logger.V(2).Info("Cannot act as the set's ServiceAccount", "err", idErr)
		if err := c.status.Write(ctx, set, parent, hub, status.Input{IdentityErr: idErr, Revision: revision}); err != nil {
			return ctx, nil, err
		}
		return ctx, nil, lookups.Err() // a read the cluster could not answer is retried
	}
	ctx = identity.WithAccount(ctx, id)
	lookups.ActAs(id, c.sh.Identities)
	if set.Chart() != nil { // a chart's parent has one version
		parent = hookrun.WithRecord(parent, c.status.Previous(parent))
		hub.Parent = parent
	}
	return ctx, &attempt{key: key, parent: parent, hub: hub, set: set, revision: revision, reader: lookups}, nil
}

// planChildren is step 2: render the children, answering lookups from the
// caches, and decide which wait for others they looked up (render). A
// render that failed is reported in the status; a nil plan means the
// reconcile ends here, with the error returned.
func (c *Controller) planChildren(ctx context.Context, a *attempt) (*pipeline.Result, error) {
	logger := klog.FromContext(ctx)
	planned, renderErr := c.render(ctx, a.set, a.hub.Parent, a.reader)
	if object.NamespaceTerminating(renderErr) || object.NamespaceTerminating(a.reader.Err()) {
		logger.V(2).Info("The parent's namespace is being deleted; creating nothing", "err", errors.Join(renderErr, a.reader.Err()))
		return nil, nil
	}
	if renderErr == nil {
		a.hooks, renderErr = hookrun.Start(a.parent, planned.Output)
	}
	if renderErr != nil {
		logger.V(2).Info("Render failed", "err", renderErr)
		if err := c.status.Write(ctx, a.set, a.parent, a.hub, status.Input{RenderErr: renderErr, Revision: a.revision}); err != nil {
			return nil, err
		}
		return nil, a.reader.Err() // a lookup the cluster could not answer is retried
	}
	return planned, nil
}

// applyChildren is step 3: watch every child kind, then apply each child
// that differs and does not wait (applyPass). A pass that wrote children
// renders again, with the API server's answers, while some child waits:
// a Service's clusterIP reaches the ConfigMap that reads it in one
// reconcile. A child that waits keeps its object as it is.
func (c *Controller) applyChildren(ctx context.Context, a *attempt, planned *pipeline.Result) *applied {
	ap := &applied{Result: planned}
	ap.owner, ap.results, ap.live, ap.terminating = c.applyPass(ctx, a, planned, a.parent)
	if ap.terminating {
		return ap
	}
	ap.all = ap.results
	for pass := 0; pass < maxRenderPasses && (len(ap.Plan.Held) > 0 || !ap.Plan.Complete) && ap.results.Writes() > 0; pass++ {
		for _, r := range ap.results {
			if (r.Action == object.Created || r.Action == object.Configured) && r.Object != nil {
				a.reader.Fresh[r.Ref] = r.Object
			}
		}
		next, err := c.render(ctx, a.set, a.hub.Parent, a.reader)
		if err != nil {
			break // the next reconcile reports it; this one stands on the last pass
		}
		ap.Result = next
		ap.owner, ap.results, ap.live, ap.terminating = c.applyPass(ctx, a, next, ap.owner)
		if ap.terminating {
			return ap
		}
		ap.all = append(ap.all, ap.results...)
	}
	c.setUnserved(a.key, hasUnwatched(ap.results))
	ap.unreachable = c.sh.Fleet.Observe(ap.results)
	for ref := range ap.Plan.Held {
		if pl, err := c.place(ctx, ref.Cluster); err == nil {
			if l := pl.Cache.Get(c.groupResource(ref), ref.Namespace, ref.Name); l != nil {
				ap.live[ref] = l
			}
		}
	}
	return ap
}

// applyPass applies one render pass's children. Children to keep are
// applied only once the parent carries the orphan finalizer,
// cluster-scoped children only once it carries the cluster-children
// finalizer (owner is the parent as those patches left it, which it
// returns). A chart's hooks are applied only when hook.Decide says so
// (hookrun): once per release revision, after their older run is
// deleted. terminating reports an apply that met the namespace being
// deleted: the reconcile stops there.
func (c *Controller) applyPass(ctx context.Context, a *attempt, planned *pipeline.Result, owner *unstructured.Unstructured) (
	_ *unstructured.Unstructured, results object.ChangeSet, live map[object.Ref]*unstructured.Unstructured, terminating bool) {
	out := planned.Output
	owner, held := c.guards.Protect(ctx, owner, out.Children)
	toApply, hookDeletes, hookLive := a.hooks.Gate(ctx, hookCluster{c}, a.set, a.parent, out, planned.Plan.Apply, a.reader.Fresh)
	results, live = c.applyAll(ctx, toApply, a.reader.Fresh, held, a)
	if results.Terminating() {
		return owner, results, live, true
	}
	a.hooks.Applied(results)
	maps.Copy(live, hookLive)
	results = append(results, hookDeletes...)
	c.status.RecordDrift(ctx, a.parent, results)
	return owner, results, live, false
}

// pruneChildren is step 4: prune this parent's children that no longer
// render (releasing those to keep), and settle its finalizers. A child
// that waits is rendered, so kept; while a failed file waits, or a child
// kind is not watched here, its children are unknown, and nothing is
// pruned; nor in a workload cluster that did not answer.
// The prune's results join ap's.
func (c *Controller) pruneChildren(ctx context.Context, a *attempt, ap *applied) error {
	var errs error
	if ap.Plan.Complete && !hasUnwatched(ap.results) {
		pruned, pruneErr := c.prune(ctx, a.parent, ap.Output.Children, ap.unreachable)
		c.guards.RecordOrphans(ctx, a.parent, pruned, "as it no longer renders")
		var finErr error
		if pruneErr == nil {
			_, finErr = c.guards.Settle(ctx, ap.owner, ap.Output.Children, ap.live)
		}
		ap.results = append(ap.results, pruned...)
		ap.all = append(ap.all, pruned...)
		errs = errors.Join(pruneErr, finErr)
	}
	c.sh.Fleet.Use(a.parent.GetUID(), childcache.ParentKey{GroupKind: c.gvk.GroupKind(), Name: a.key},
		clusters.Targeted(ap.Output.Children, status.ChildClusters(a.parent)))
	c.sh.Metrics.ObserveChanges(c.gvk.Kind, ap.all)
	if n := ap.all.Writes(); n > 0 {
		klog.FromContext(ctx).V(2).Info("Applied children", "writes", n)
	}
	return errs
}

// report is step 5: write the parent's status, from the children as
// rendered and as they are, the set's status template, a chart's notes
// and its release record.
func (c *Controller) report(ctx context.Context, a *attempt, ap *applied) error {
	out, plan := ap.Output, ap.Plan
	in := status.Input{Rendered: out.Children, Results: ap.results, Live: ap.live, Waits: plan.Waits, Cycles: plan.Cycles, Revision: a.revision, Unreachable: ap.unreachable}
	in.Extra, in.ExtraErr = c.renderStatusExtra(ctx, a.set, a.hub.Parent, out.Children, ap.live, a.reader)
	in = statuswriter.WithNotes(in, out.Notes)
	if a.hooks != nil {
		in.Release = a.hooks.Release()
	}
	if err := c.status.Write(ctx, a.set, a.parent, a.hub, in); err != nil {
		return err
	}
	if a.hooks.Changed() {
		// A hook the Record now calls done is dropped by the next render,
		// and what waited for it goes ahead: no child event may come.
		c.queue.Add(a.key)
	}
	return nil
}

// maxRenderPasses bounds the renders one reconcile makes after the first,
// each after a pass that wrote children that others may wait for.
const maxRenderPasses = 3
