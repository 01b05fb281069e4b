package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/finalizer"
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
	return errors.Join(retryableOf(ap.results), pruneErr, a.reader.Err())
}

// attempt is what one reconcile of a parent works with, from begin on.
type attempt struct {
	key    cache.ObjectName
	parent *unstructured.Unstructured
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
			return ctx, nil, c.status.Write(ctx, c.set.Load(), parent, status.Input{RolloutErr: err, Revision: rev})
		}
		logger.V(2).Info("Waiting for the set's rollout state")
		c.queue.AddAfter(key, 2*time.Second)
		return ctx, nil, nil
	}
	lookups := c.reader(ctx, childcache.ParentKey{GroupKind: c.gvk.GroupKind(), Name: key}, set)
	id, idErr := c.identityFor(ctx, set, parent, lookups)
	if idErr != nil {
		defer lookups.Done()
		logger.V(2).Info("Cannot act as the set's ServiceAccount", "err", idErr)
		if err := c.status.Write(ctx, set, parent, status.Input{IdentityErr: idErr, Revision: revision}); err != nil {
			return ctx, nil, err
		}
		return ctx, nil, lookups.Err() // a read the cluster could not answer is retried
	}
	ctx = identity.WithAccount(ctx, id)
	lookups.ActAs(id, c.sh.Identities)
	if set.Chart() != nil {
		parent = hookrun.WithRecord(parent, c.status.Previous(parent))
	}
	return ctx, &attempt{key: key, parent: parent, set: set, revision: revision, reader: lookups}, nil
}

// planChildren is step 2: render the children, answering lookups from the
// caches, and decide which wait for others they looked up (render). A
// render that failed is reported in the status; a nil plan means the
// reconcile ends here, with the error returned.
func (c *Controller) planChildren(ctx context.Context, a *attempt) (*pipeline.Result, error) {
	logger := klog.FromContext(ctx)
	planned, renderErr := c.render(ctx, a.set, a.parent, a.reader)
	if namespaceTerminating(renderErr) || namespaceTerminating(a.reader.Err()) {
		logger.V(2).Info("The parent's namespace is being deleted; creating nothing", "err", errors.Join(renderErr, a.reader.Err()))
		return nil, nil
	}
	if renderErr == nil {
		a.hooks, renderErr = hookrun.Start(a.parent, planned.Output)
	}
	if renderErr != nil {
		logger.V(2).Info("Render failed", "err", renderErr)
		if err := c.status.Write(ctx, a.set, a.parent, status.Input{RenderErr: renderErr, Revision: a.revision}); err != nil {
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
		next, err := c.render(ctx, a.set, a.parent, a.reader)
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
	for ref := range ap.Plan.Held {
		if l := c.sh.Cache.Get(c.groupResource(ref), ref.Namespace, ref.Name); l != nil {
			ap.live[ref] = l
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
	results, live = c.applyAll(ctx, toApply, a.reader.Fresh, held)
	if terminatingIn(results) {
		return owner, results, live, true
	}
	a.hooks.Applied(results)
	maps.Copy(live, hookLive)
	results = append(results, hookDeletes...)
	c.recordDrift(ctx, a.parent, results)
	return owner, results, live, false
}

// pruneChildren is step 4: prune this parent's children that no longer
// render (releasing those to keep), and settle its finalizers. A child
// that waits is rendered, so kept; while a failed file waits, or a child
// kind is not watched, its children are unknown, and nothing is pruned.
// The prune's results join ap's.
func (c *Controller) pruneChildren(ctx context.Context, a *attempt, ap *applied) error {
	var errs error
	if ap.Plan.Complete && !hasUnwatched(ap.results) {
		pruned, pruneErr := c.prune(ctx, a.parent, ap.Output.Children)
		c.guards.RecordOrphans(ctx, a.parent, pruned, "as it no longer renders")
		var finErr error
		if pruneErr == nil {
			_, finErr = c.guards.Settle(ctx, ap.owner, ap.Output.Children, ap.live)
		}
		ap.results = append(ap.results, pruned...)
		ap.all = append(ap.all, pruned...)
		errs = errors.Join(pruneErr, finErr)
	}
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
	in := status.Input{Rendered: out.Children, Results: ap.results, Live: ap.live, Waits: plan.Waits, Cycles: plan.Cycles, Revision: a.revision}
	in.Extra, in.ExtraErr = c.renderStatusExtra(ctx, a.set, a.parent, out.Children, ap.live, a.reader)
	in = statuswriter.WithNotes(in, out.Notes)
	if a.hooks != nil {
		in.Release = a.hooks.Release()
	}
	if err := c.status.Write(ctx, a.set, a.parent, in); err != nil {
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
// replica each child is labelled with its parent's bucket.
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
	return pipeline.Plan(ctx, set, parent, lookups, pipeline.Options{Timeout: d, TimeoutCause: cause, Hooks: hooks})
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

// groupResource maps a child's kind to the resource its informer watches,
// or the zero value when the kind is not served.
func (c *Controller) groupResource(ref object.Ref) schema.GroupResource {
	m, err := c.sh.Mapper.RESTMapping(ref.GroupKind)
	if err != nil {
		return schema.GroupResource{}
	}
	return m.Resource.GroupResource()
}

// applyAll applies each rendered child and returns the results, with the
// best-known live object of each child. A child that held holds back fails
// with its error: the parent could not be given the finalizer that
// protects it.
//
// fresh holds children an earlier pass of this reconcile applied, as the
// API server answered; they stand for the cache, which may lag behind.
func (c *Controller) applyAll(ctx context.Context, rendered []*unstructured.Unstructured, fresh map[object.Ref]*unstructured.Unstructured, held finalizer.Holds) (object.ChangeSet, map[object.Ref]*unstructured.Unstructured) {
	results := make(object.ChangeSet, 0, len(rendered))
	live := make(map[object.Ref]*unstructured.Unstructured, len(rendered))
	for _, child := range rendered {
		ref := object.RefOf(child)
		if err := held.Of(child); err != nil {
			results = append(results, object.Result{Ref: ref, APIVersion: child.GetAPIVersion(), Action: object.Failed, Err: err})
			continue
		}
		gr, err := c.watchChildKind(ctx, child.GroupVersionKind())
		if err != nil {
			results = append(results, object.Result{Ref: ref, APIVersion: child.GetAPIVersion(), Action: object.Failed,
				Err: fmt.Errorf("apply %s: %w", ref, err)})
			continue
		}
		cached := fresh[ref]
		if cached == nil {
			cached = c.sh.Cache.Get(gr, ref.Namespace, ref.Name)
		}
		r := c.applier(ctx).Apply(ctx, child, cached)
		results = append(results, r)
		if namespaceTerminating(r.Err) {
			// Every other create in the namespace is refused alike.
			klog.FromContext(ctx).V(2).Info("The parent's namespace is being deleted; creating no children", "child", ref.String())
			break
		}
		if r.Object != nil {
			live[ref] = r.Object
		} else if cached != nil {
			live[ref] = cached
		}
	}
	return results, live
}

// watchChildKind checks that the version a template names is served (the
// apply uses it), and makes sure the informer of the kind's group-resource
// runs and has synced. The informer watches the kind at the cluster's
// preferred version, whatever version the templates name.
func (c *Controller) watchChildKind(ctx context.Context, gvk schema.GroupVersionKind) (schema.GroupResource, error) {
	if _, _, err := c.sh.Applier.Resource(gvk); err != nil {
		return schema.GroupResource{}, err
	}
	return c.watchGroupKind(ctx, gvk.GroupKind())
}

// watchGroupKind makes sure the informer of a kind runs and has synced.
func (c *Controller) watchGroupKind(ctx context.Context, gk schema.GroupKind) (schema.GroupResource, error) {
	m, err := c.sh.Mapper.RESTMapping(gk)
	if err != nil {
		return schema.GroupResource{}, err
	}
	return m.Resource.GroupResource(), c.sh.Cache.Ensure(ctx, m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace)
}

// prune deletes the cached children of parent that did not render, and
// releases those to keep (object.AnnotationDeletePolicy orphan). It only
// runs when every child kind resolved and its cache synced, so that a kind
// that is temporarily not served, or not readable, never causes its
// children to be deleted. Children are matched by group, kind, namespace
// and name: a child rendered at a new version is the same child.
func (c *Controller) prune(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured) (object.ChangeSet, error) {
	// Kinds listed in the parent's status were rendered before; watch them
	// so that children of a kind no template renders any more are found.
	for _, gvk := range status.ChildKinds(parent) {
		if _, err := c.watchGroupKind(ctx, gvk.GroupKind()); err != nil && !meta.IsNoMatchError(err) {
			return nil, err
		}
	}
	keep := make(map[object.Ref]bool, len(rendered))
	for _, r := range rendered {
		keep[object.RefOf(r)] = true
	}
	var stale, orphans []*unstructured.Unstructured
	for _, child := range c.sh.Cache.Owned(parent.GetUID()) {
		switch {
		case keep[object.RefOf(child)] || !object.IsChildOf(child, parent) || child.GetDeletionTimestamp() != nil:
		case hookrun.IsRun(child):
			// A hook's run is not pruned when it no longer renders (it
			// is done, or of another event): as under Helm, it stays
			// until its delete policy, its next run or the parent's
			// deletion removes it.
		case object.IsOrphan(child.GetAnnotations()):
			orphans = append(orphans, child)
		default:
			stale = append(stale, child)
		}
	}
	cs := c.applier(ctx).Prune(ctx, stale)
	cs = append(cs, c.applier(ctx).Release(ctx, orphans, parent.GetUID())...)
	return cs, retryableOf(cs)
}

// hasUnwatched reports whether a child's kind is not served by the
// cluster, or its cache could not be filled: the parent waits for a CRD
// change or for that informer to sync.
func hasUnwatched(results object.ChangeSet) bool {
	for _, r := range results {
		var nw *childcache.NotWatchedError
		if r.Err != nil && (meta.IsNoMatchError(r.Err) || errors.As(r.Err, &nw)) {
			return true
		}
	}
	return false
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

// retryableOf joins the failures of a change set that are worth retrying.
func retryableOf(cs object.ChangeSet) error {
	var errs []error
	for _, r := range cs {
		errs = append(errs, retryable(r.Err))
	}
	return errors.Join(errs...)
}

// namespaceTerminating reports whether err is the API server's refusal to
// create an object in a namespace that is being deleted: the cause the
// NamespaceLifecycle admission plugin gives, not its message.
func namespaceTerminating(err error) bool {
	return err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// terminatingIn reports whether an apply of results met a namespace being
// deleted. The reconcile then stops where it is: the namespace controller
// is deleting the parent and its children, the parent gets no new
// children, no status and no retry, and nothing counts as failed.
func terminatingIn(results object.ChangeSet) bool {
	for _, r := range results {
		if namespaceTerminating(r.Err) {
			return true
		}
	}
	return false
}

// retryable keeps the errors worth retrying with backoff. An object the
// API server rejects as invalid, or a kind it does not serve, will fail the
// same way until the spec, the template or the CRDs change, and each of
// those enqueues the parent again.
//
// A child name taken by an object that is not Loom's is refused until the
// spec or the template changes, or the periodic resync: Loom cannot watch
// objects that do not carry its labels. A create in a namespace being
// deleted is refused until the namespace and the parent are gone.
func retryable(err error) error {
	var owned *object.OwnedByAnotherError
	var notAdopted *object.NotAdoptedError
	if err == nil || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || meta.IsNoMatchError(err) ||
		errors.As(err, &owned) || errors.As(err, &notAdopted) || namespaceTerminating(err) {
		return nil
	}
	return err
}
