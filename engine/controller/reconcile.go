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
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/hook"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// reconcile makes one parent's children match its templates and writes its
// status. It returns an error only for failures worth retrying with
// backoff; a broken template or spec is reported in the status and waits
// for the spec or the template to change.
//
// parent is the object of key as the worker read it from the cache (nil
// when it is gone), the very object whose shard gate the worker entered.
func (c *parentController) reconcile(ctx context.Context, key cache.ObjectName, parent *unstructured.Unstructured) error {
	logger := klog.FromContext(ctx)

	// 1. Gone means nothing to do; going means releasing its children to
	//    keep, if it has any (orphan.go).
	if parent == nil || parent.GetDeletionTimestamp() != nil {
		c.setUnserved(key, false)
		if parent != nil {
			return c.finalize(ctx, parent)
		}
		return nil
	}
	set, revision := c.setFor(parent)
	if set == nil {
		// The set's rollout state is not loaded: which revision this
		// parent renders is unknown, so it renders nothing. When the
		// state is unavailable, the parent says why; the first decision
		// that succeeds reconciles every parent.
		if err := c.rollouts.Why(); err != nil {
			logger.V(2).Info("The set's rollout state is unavailable", "err", err)
			rev, _, _ := unstructured.NestedString(parent.Object, "status", "templateRevision")
			return c.writeStatus(ctx, c.set.Load(), parent, status.Input{RolloutErr: err, Revision: rev})
		}
		logger.V(2).Info("Waiting for the set's rollout state")
		c.queue.AddAfter(key, 2*time.Second)
		return nil
	}
	reader := c.m.reader(ctx, childcache.ParentKey{GroupKind: c.gvk.GroupKind(), Name: key}, set.Config.Lookups)
	defer reader.Done()
	// The set's ServiceAccount, if it names one, applies, prunes and
	// looks up for this parent (actas.go); ctx carries it.
	id, idErr := c.identityFor(ctx, set, parent, reader)
	if idErr != nil {
		logger.V(2).Info("Cannot act as the set's ServiceAccount", "err", idErr)
		if err := c.writeStatus(ctx, set, parent, status.Input{IdentityErr: idErr, Revision: revision}); err != nil {
			return err
		}
		return reader.Err() // a read the cluster could not answer is retried
	}
	ctx = identity.WithAccount(ctx, id)
	reader.as, reader.idents = id, c.m.idents

	// 2. Render the children, answering lookups from the caches, and
	//    decide which wait for others they looked up (engine/depend).
	if set.Chart() != nil {
		parent = c.withRecord(parent)
	}
	planned, renderErr := c.render(ctx, set, parent, reader)
	if namespaceTerminating(renderErr) || namespaceTerminating(reader.Err()) {
		logger.V(2).Info("The parent's namespace is being deleted; creating nothing", "err", errors.Join(renderErr, reader.Err()))
		return nil
	}
	var hooks *hookRun
	if renderErr == nil {
		hooks, renderErr = startHooks(parent, planned.Output)
	}
	if renderErr != nil {
		logger.V(2).Info("Render failed", "err", renderErr)
		if err := c.writeStatus(ctx, set, parent, status.Input{RenderErr: renderErr, Revision: revision}); err != nil {
			return err
		}
		return reader.Err() // a lookup the cluster could not answer is retried
	}
	out, plan := planned.Output, planned.Plan

	// 3. Watch every child kind, then apply each child that differs and
	//    does not wait. A pass that wrote children renders again, with the
	//    API server's answers, while some child waits: a Service's
	//    clusterIP reaches the ConfigMap that reads it in one reconcile.
	//    Children to keep are applied only once the parent carries the
	//    orphan finalizer, cluster-scoped children only once it carries
	//    the cluster-children finalizer (owner is the parent as those
	//    patches left it).
	//    A chart's hooks are applied only when hook.Decide says so
	//    (hooks.go): once per release revision, after their older run is
	//    deleted.
	owner, held := c.protect(ctx, parent, out.Children)
	toApply, hookDeletes, hookLive := c.gate(ctx, set, parent, hooks, out, plan.Apply, reader.Fresh)
	results, live := c.applyAll(ctx, toApply, reader.Fresh, held)
	if terminatingIn(results) {
		return nil
	}
	hooks.applied(results)
	maps.Copy(live, hookLive)
	results = append(results, hookDeletes...)
	c.recordDrift(ctx, parent, results)
	all := results
	for pass := 0; pass < maxRenderPasses && (len(plan.Held) > 0 || !plan.Complete) && results.Writes() > 0; pass++ {
		for _, r := range results {
			if (r.Action == object.Created || r.Action == object.Configured) && r.Object != nil {
				reader.Fresh[r.Ref] = r.Object
			}
		}
		next, err := c.render(ctx, set, parent, reader)
		if err != nil {
			break // the next reconcile reports it; this one stands on the last pass
		}
		out, plan = next.Output, next.Plan
		owner, held = c.protect(ctx, owner, out.Children)
		toApply, hookDeletes, hookLive = c.gate(ctx, set, parent, hooks, out, plan.Apply, reader.Fresh)
		results, live = c.applyAll(ctx, toApply, reader.Fresh, held)
		if terminatingIn(results) {
			return nil
		}
		hooks.applied(results)
		maps.Copy(live, hookLive)
		results = append(results, hookDeletes...)
		c.recordDrift(ctx, parent, results)
		all = append(all, results...)
	}
	c.setUnserved(key, hasUnwatched(results))
	for ref := range plan.Held { // a waiting child keeps its object as it is
		if l := c.m.cache.Get(c.groupResource(ref), ref.Namespace, ref.Name); l != nil {
			live[ref] = l
		}
	}

	// 4. Prune this parent's children that no longer render (releasing
	//    those to keep). A child that waits is rendered, so kept; while a
	//    failed file waits, its children are unknown, and nothing is
	//    pruned. With no child to keep left, the orphan finalizer goes.
	var pruned object.ChangeSet
	var pruneErr, finErr error
	if plan.Complete && !hasUnwatched(results) {
		pruned, pruneErr = c.prune(ctx, parent, out.Children)
		c.recordOrphans(ctx, parent, pruned, "as it no longer renders")
		if pruneErr == nil {
			_, finErr = c.settleFinalizers(ctx, owner, out.Children, live)
		}
	}
	results = append(results, pruned...)
	all = append(all, pruned...)
	c.m.metrics.observeChanges(c.gvk.Kind, all)
	if n := all.Writes(); n > 0 {
		logger.V(2).Info("Applied children", "writes", n)
	}

	// 5. Write the parent's status.
	in := status.Input{Rendered: out.Children, Results: results, Live: live, Waits: plan.Waits, Cycles: plan.Cycles, Revision: revision}
	in.Extra, in.ExtraErr = c.renderStatusExtra(ctx, set, parent, out.Children, live, reader)
	if out.Notes != "" {
		if in.Extra == nil {
			in.Extra = map[string]any{}
		}
		in.Extra[crd.StatusNotes] = out.Notes
	}
	if hooks != nil {
		in.Release = hooks.rec.Map()
	}
	if err := c.writeStatus(ctx, set, parent, in); err != nil {
		return err
	}
	if hooks.changed() {
		// A hook the Record now calls done is dropped by the next render,
		// and what waited for it goes ahead: no child event may come.
		c.queue.Add(key)
	}
	return errors.Join(retryableOf(results), pruneErr, finErr, reader.Err())
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
func (c *parentController) render(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, reader *lookupReader) (*pipeline.Result, error) {
	hooks := []pipeline.Hook{
		func(parent *unstructured.Unstructured, out *render.Output) error {
			if len(out.Generated) == 0 {
				return nil
			}
			return reader.keep(parent, out.Generated)
		},
		func(parent *unstructured.Unstructured, _ *render.Output) error {
			return c.markSeed(reader, parent)
		},
	}
	if c.m != nil && c.m.opts.Shard != nil {
		hooks = append(hooks, func(parent *unstructured.Unstructured, out *render.Output) error {
			labelBucket(out.Children, parent.GetUID())
			return nil
		})
	}
	d, cause := c.renderDeadline()
	return pipeline.Plan(ctx, set, parent, reader, pipeline.Options{Timeout: d, TimeoutCause: cause, Hooks: hooks})
}

// renderContext bounds one render of the status template by
// renderDeadline.
func (c *parentController) renderContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d, cause := c.renderDeadline()
	return context.WithTimeoutCause(ctx, d, cause)
}

// renderDeadline is how long one render (of the children or of the
// status template) may run: half the reconcile timeout, the rest being
// for the status that reports it. cause is what a render it stops gives.
func (c *parentController) renderDeadline() (d time.Duration, cause error) {
	d = c.m.opts.ReconcileTimeout / 2
	return d, fmt.Errorf("it ran for %s, half the reconcile timeout (loom run --reconcile-timeout)", d)
}

// groupResource maps a child's kind to the resource its informer watches,
// or the zero value when the kind is not served.
func (c *parentController) groupResource(ref object.Ref) schema.GroupResource {
	m, err := c.m.mapper.RESTMapping(ref.GroupKind)
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
func (c *parentController) applyAll(ctx context.Context, rendered []*unstructured.Unstructured, fresh map[object.Ref]*unstructured.Unstructured, held holds) (object.ChangeSet, map[object.Ref]*unstructured.Unstructured) {
	results := make(object.ChangeSet, 0, len(rendered))
	live := make(map[object.Ref]*unstructured.Unstructured, len(rendered))
	for _, child := range rendered {
		ref := object.RefOf(child)
		if err := held.of(child); err != nil {
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
			cached = c.m.cache.Get(gr, ref.Namespace, ref.Name)
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
func (c *parentController) watchChildKind(ctx context.Context, gvk schema.GroupVersionKind) (schema.GroupResource, error) {
	if _, _, err := c.m.applier.Resource(gvk); err != nil {
		return schema.GroupResource{}, err
	}
	return c.watchGroupKind(ctx, gvk.GroupKind())
}

// watchGroupKind makes sure the informer of a kind runs and has synced.
func (c *parentController) watchGroupKind(ctx context.Context, gk schema.GroupKind) (schema.GroupResource, error) {
	m, err := c.m.mapper.RESTMapping(gk)
	if err != nil {
		return schema.GroupResource{}, err
	}
	return m.Resource.GroupResource(), c.m.cache.Ensure(ctx, m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace)
}

// prune deletes the cached children of parent that did not render, and
// releases those to keep (object.AnnotationDeletePolicy orphan). It only
// runs when every child kind resolved and its cache synced, so that a kind
// that is temporarily not served, or not readable, never causes its
// children to be deleted. Children are matched by group, kind, namespace
// and name: a child rendered at a new version is the same child.
func (c *parentController) prune(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured) (object.ChangeSet, error) {
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
	for _, child := range c.m.cache.Owned(parent.GetUID()) {
		switch {
		case keep[object.RefOf(child)] || !object.IsChildOf(child, parent) || child.GetDeletionTimestamp() != nil:
		case child.GetAnnotations()[hook.AnnotationRevision] != "":
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
// metadata and status (see childView).
func (c *parentController) renderStatusExtra(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured, reader *lookupReader) (map[string]any, error) {
	if !set.HasStatus() {
		return nil, nil
	}
	children := make([]*unstructured.Unstructured, 0, len(rendered))
	for _, r := range rendered {
		if l := live[object.RefOf(r)]; l != nil {
			children = append(children, childView(r, l))
		}
	}
	rctx, cancel := c.renderContext(ctx)
	defer cancel()
	extra, _, err := set.RenderStatusWith(rctx, parent, children, reader)
	return extra, err
}

// childView is what the status template sees of one child: the rendered
// object (the fields Loom applied, which hold their values while Loom's
// apply stands), with the live object's metadata and status. The cache
// keeps no more of a live child than that (pack.Slim); fields the API
// server fills in spec, such as a Service's clusterIP, are not there.
func childView(rendered, live *unstructured.Unstructured) *unstructured.Unstructured {
	live = pack.Slim(live, "") // the same view whether the object came from the cache or an apply
	out := make(map[string]any, len(rendered.Object)+1)
	for k, v := range rendered.Object {
		out[k] = v
	}
	md := map[string]any{}
	if m, ok := rendered.Object["metadata"].(map[string]any); ok {
		for k, v := range m {
			md[k] = v
		}
	}
	if m, ok := live.Object["metadata"].(map[string]any); ok {
		for k, v := range m {
			if k != "annotations" { // the cache keeps only Loom's own
				md[k] = v
			}
		}
	}
	out["metadata"] = md
	if st, ok := live.Object["status"]; ok {
		out["status"] = st
	} else {
		delete(out, "status")
	}
	return &unstructured.Unstructured{Object: out}
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
