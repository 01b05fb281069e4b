package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/controller/clusters"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

var errDifferences = errors.New("the cluster differs from what the templates render")

type diffOptions struct {
	set       string
	kube      kubeTarget
	namespace string
	selector  string
	// loomNS is Loom's namespace in the cluster (--loom-namespace), whose
	// Secrets register workload clusters; allowExec is
	// --allow-kubeconfig-exec; clusterTimeout bounds each request to a
	// workload cluster.
	loomNS         string
	allowExec      bool
	clusterTimeout time.Duration
}

func newDiffCommand() *cobra.Command {
	o := diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff -t SET [NAME...]",
		Short: "Show what a template set would change in the cluster, before Loom applies it",
		Long: `Diff renders every parent of the set's kind in the cluster (or the named
ones) with the templates in -t, asks the API server what each child would
become (a server-side apply with dryRun=All, exactly as Loom sends it), and
prints a unified diff against the live child. Children that would be created
or pruned are shown whole. Nothing is written.

Templates' lookups read the live cluster, under loom.yaml's declarations. As
in the controller, a child that looked up another that is not there or not
ready yet is not applied: diff says what it waits for and leaves it, and its
live object, alone; while a whole template file waits, nothing is pruned.

A child whose loom.dev/manage is not full gets a line saying what Loom does
with it, as the controller decides: a create-only child that exists is left
as it is (one that is missing is announced, then diffed as a create); an
observed child is read, never written: diff says whether it exists (the
parent waits for it when it does not), or that Loom releases it once when it
is still Loom's child. A patch child is someone else's object: one that
exists is diffed as the apply of the template's fields only, and one that
does not is never created (the parent waits for it).

A child placed in a workload cluster (its loom.dev/cluster annotation) is
diffed against that cluster: diff reads the registrations as Loom does (the
Secrets of --loom-namespace labelled loom.dev/cluster, and Cluster API's
<cluster>-kubeconfig Secrets), reaches the cluster with the registration's
kubeconfig, refusing what Loom refuses (a credential plugin without
--allow-kubeconfig-exec, files on this machine's disk), and asks it for the
dry run. Its diff is headed live@CLUSTER/... and rendered@CLUSTER/..., and the
children to prune there are found there, by the parent's ApplySet label and
loom.dev/owner, as Loom finds them. Each request to a workload cluster must
be answered within --cluster-timeout: a cluster that does not answer, or
cannot be reached, fails the parents with children there, naming the
cluster (exit 2), and is not asked again in the same run. The registrations
are read only for a set whose loom.yaml has clusters.

Use it before saving a template edit into the folder a running Loom watches:
Loom applies an edit to every parent at once.

Exit status: 0 when nothing would change; 1 when something would; 2 when
the diff itself failed (a template does not render, the cluster or a
workload cluster a child goes to cannot be reached or does not answer within
--cluster-timeout, a request failed) or the command was used wrongly (an unknown
flag, no -t), so that a failure never reads as "something would change".`,
		Example: `  loom diff -t templates/myresource
  loom diff -t templates/myresource -n shop web
  loom diff -t templates/myresource -l tier=frontend --kubeconfig .cluster/kubeconfig`,
		RunE: func(cmd *cobra.Command, names []string) error {
			changed, err := runDiff(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, names)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if changed {
				cmd.SilenceErrors = true // the diff says it; exit 1 like kubectl diff
				return &exitError{code: 1, err: errDifferences}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.set, "templates", "t", "", "the template set's folder (holds loom.yaml)")
	o.kube.register(f, "")
	f.StringVarP(&o.namespace, "namespace", "n", "", "only parents in this namespace (default: all)")
	f.StringVarP(&o.selector, "selector", "l", "", "only parents matching this label selector")
	f.StringVar(&o.loomNS, "loom-namespace", offline.DefaultLoomNamespace, "Loom's namespace in the cluster: its Secrets register the workload clusters children may be placed in (loom run's --loom-namespace)")
	f.BoolVar(&o.allowExec, cluster.FlagAllowExec, false, "let a registered cluster's kubeconfig run an exec credential plugin or an auth-provider, on this machine (as loom run's)")
	f.DurationVar(&o.clusterTimeout, "cluster-timeout", defaultClusterTimeout, "give up on a workload cluster that has not answered a request after this long")
	_ = cmd.MarkFlagRequired("templates")
	return failsWith(cmd, exitTrouble) // 1 says something would change
}

// differ holds what one diff run needs.
type differ struct {
	local     *place // the cluster the parents are in
	workloads *workloads
	out       io.Writer
}

// at returns the cluster a child goes to (object.TargetCluster).
func (d *differ) at(name string) (*place, error) {
	if name == "" {
		return d.local, nil
	}
	return d.workloads.at(name)
}

// failed names p in err, a request's error there, and takes a workload
// cluster that did not answer as down for the rest of the run.
func (d *differ) failed(p *place, err error) error {
	err = unanswered(p.name, d.workloads.timeout, err)
	d.workloads.fail(p.name, err)
	return err
}

// runDiff diffs every selected parent and reports whether anything would
// change. A parent that fails is reported and counted, and the others are
// still diffed.
func runDiff(ctx context.Context, out, warn io.Writer, o diffOptions, names []string) (bool, error) {
	set, err := render.Load(o.set)
	if err != nil {
		return false, fmt.Errorf("load template set %s: %w", o.set, err)
	}
	cfg, err := restConfig(o.kube)
	if err != nil {
		return false, err
	}
	local, err := newPlace("", cfg)
	if err != nil {
		return false, err
	}
	var regs []cluster.Registration
	if set.Config.Clusters != nil { // else no child may name a cluster
		if regs, err = readRegistrations(ctx, cfg, o.loomNS, warn); err != nil {
			return false, err
		}
	}
	d := &differ{local: local, out: out,
		workloads: newWorkloads(regs, cluster.Options{AllowExec: o.allowExec}, o.clusterTimeout)}
	// Parents are listed in the version the API server stores them in (no
	// conversion webhook in the way), and converted to the templates'.
	gvr, _, err := local.applier.Resource(pipeline.StorageGVK(set))
	if err != nil {
		return false, fmt.Errorf("parent kind %s: %w", pipeline.StorageGVK(set), err)
	}
	list, err := local.client.Resource(gvr).Namespace(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: o.selector})
	if err != nil {
		return false, fmt.Errorf("list %s: %w", gvr.Resource, err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var changed bool
	var failures []error
	seen := 0
	for i := range list.Items {
		parent := &list.Items[i]
		if len(names) > 0 && !want[parent.GetName()] {
			continue
		}
		seen++
		hub, err := pipeline.ToVersion(pipeline.ConverterOf(set), parent, set.ParentGVK().Version)
		c := false
		if err == nil {
			c, err = d.parent(ctx, set, hub, regs)
		}
		changed = changed || c
		if err != nil {
			fmt.Fprintf(out, "%s %s/%s: %v\n", parent.GetKind(), parent.GetNamespace(), parent.GetName(), err)
			failures = append(failures, err)
		}
	}
	if seen == 0 && len(names) == 0 {
		fmt.Fprintf(out, "no %s found\n", set.ParentGVK().Kind)
	}
	if len(names) > seen {
		return changed, fmt.Errorf("%d of the named parents not found", len(names)-seen)
	}
	if len(failures) > 0 {
		return changed, fmt.Errorf("%d of %d parents could not be diffed", len(failures), seen)
	}
	return changed, nil
}

// parent diffs one parent's children, and reports whether any would change.
// regs are the registered workload clusters.
func (d *differ) parent(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, regs []cluster.Registration) (bool, error) {
	title := fmt.Sprintf("%s %s/%s", parent.GetKind(), parent.GetNamespace(), parent.GetName())
	// The controller's own pipeline: a child that waits for another it
	// looked up is not applied, and neither it nor, while a file waits,
	// anything else is pruned.
	planned, err := pipeline.Plan(ctx, set, parent, &liveReader{ctx: ctx, p: d.local}, pipeline.Options{Clusters: regs})
	if err != nil {
		return false, err
	}
	plan := planned.Plan
	for _, h := range pipeline.Describe(plan, title) {
		fmt.Fprintln(d.out, h)
	}
	var counts [5]int // created, configured, unchanged, pruned, orphaned
	rendered := map[object.Ref]bool{}
	kinds := map[schema.GroupVersionKind]bool{}
	for ref := range plan.Held {
		rendered[ref] = true // kept, not pruned
	}
	for _, child := range plan.Apply {
		p, err := d.at(object.TargetCluster(child))
		if err != nil {
			return false, err
		}
		ref := object.RefOf(child)
		rendered[ref] = true
		kinds[child.GroupVersionKind()] = true
		before, err := live(ctx, p, child.GroupVersionKind(), ref)
		if err != nil {
			return false, d.failed(p, err)
		}
		if n, done := d.byMode(child, before, parent.GetUID()); done {
			counts[n]++
			continue
		}
		if err := ownByNamespace(ctx, p, child); err != nil {
			return false, d.failed(p, err)
		}
		after, err := p.applier.DryRun(ctx, child)
		if err != nil {
			return false, d.failed(p, err)
		}
		switch changed, err := d.print(ref, before, after); {
		case err != nil:
			return false, err
		case before == nil:
			counts[0]++
		case changed:
			counts[1]++
			if object.DriftOf(child.GetAnnotations(), "") == object.DriftWarn && before.GetAnnotations()[apply.AnnotationApplied] == after.GetAnnotations()[apply.AnnotationApplied] {
				fmt.Fprintf(d.out, "%s: %s: %s: Loom leaves these changes by another writer as they are until the child's templates change\n",
					ref, object.AnnotationDrift, object.DriftWarn)
			}
		default:
			counts[2]++
		}
	}
	if plan.Complete {
		pruned, err := d.prunable(ctx, parent, clusters.Targeted(plan.Apply, placedBefore(parent, plan.Held)), kinds, rendered)
		if err != nil {
			return false, err
		}
		for _, obj := range pruned {
			if object.IsOrphan(obj.GetAnnotations()) { // released, not deleted: its spec stays
				fmt.Fprintf(d.out, "%s: no longer renders; kept (%s: %s), released from Loom\n",
					object.RefOf(obj), object.AnnotationDeletePolicy, object.DeletePolicyOrphan)
				counts[4]++
				continue
			}
			if _, err := d.print(object.RefOf(obj), obj, nil); err != nil {
				return false, err
			}
			counts[3]++
		}
	}
	fmt.Fprintf(d.out, "%s: %d to create, %d to change, %d unchanged, %d to prune", title, counts[0], counts[1], counts[2], counts[3])
	if counts[4] > 0 {
		fmt.Fprintf(d.out, ", %d to orphan", counts[4])
	}
	if len(plan.Held) > 0 {
		fmt.Fprintf(d.out, ", %d waiting", len(plan.Held))
	}
	if !plan.Complete {
		fmt.Fprint(d.out, " (nothing is pruned while a template file waits)")
	}
	fmt.Fprintln(d.out)
	return counts[0]+counts[1]+counts[3]+counts[4] > 0, nil
}

// placedBefore returns the workload clusters where the parent may have
// children that no longer render: those its status.children name, and
// those of the children held back, which are kept.
func placedBefore(parent *unstructured.Unstructured, held map[object.Ref]bool) []string {
	out := status.ChildClusters(parent)
	for ref := range held {
		if ref.Cluster != "" {
			out = append(out, ref.Cluster)
		}
	}
	return out
}

// ownByNamespace gives a namespaced child to keep its Namespace (in the
// cluster p it goes to) as an owner, as the controller does before
// applying it.
func ownByNamespace(ctx context.Context, p *place, child *unstructured.Unstructured) error {
	ns := child.GetNamespace()
	if ns == "" || !object.IsOrphan(child.GetAnnotations()) {
		return nil
	}
	n, err := p.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read namespace %s, the owner of children to keep: %w", ns, err)
	}
	object.AddNamespaceOwner(child, n.GetUID())
	return nil
}

// live reads a child from the API server of p; nil when it does not
// exist.
func live(ctx context.Context, p *place, gvk schema.GroupVersionKind, ref object.Ref) (*unstructured.Unstructured, error) {
	gvr, _, err := p.applier.Resource(gvk)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", ref, err)
	}
	obj, err := p.client.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", ref, err)
	}
	return obj, nil
}

// prunable lists the parent's children that no longer render, in each of
// targeted (the cluster the parent is in, "", and the workload clusters
// it places children in or did), the way Loom's prune finds them: the
// parent's ApplySet label and its UID as controller (or in loom.dev/owner,
// on a cluster-scoped child or one in a workload cluster), over the kinds
// rendered now and those the status lists.
func (d *differ) prunable(ctx context.Context, parent *unstructured.Unstructured, targeted []string, kinds map[schema.GroupVersionKind]bool, rendered map[object.Ref]bool) ([]*unstructured.Unstructured, error) {
	for _, k := range status.ChildKinds(parent) {
		kinds[k] = true
	}
	var out []*unstructured.Unstructured
	for _, cl := range targeted {
		p, err := d.at(cl)
		if err != nil {
			return nil, err
		}
		part, err := prunableAt(ctx, p, parent, kinds, rendered)
		if err != nil {
			return nil, d.failed(p, err)
		}
		out = append(out, part...)
	}
	sort.Slice(out, func(i, j int) bool { return object.RefOf(out[i]).String() < object.RefOf(out[j]).String() })
	return out, nil
}

// prunableAt is prunable in the cluster p.
func prunableAt(ctx context.Context, p *place, parent *unstructured.Unstructured, kinds map[schema.GroupVersionKind]bool, rendered map[object.Ref]bool) ([]*unstructured.Unstructured, error) {
	selector := object.ChildSelector(parent)
	var out []*unstructured.Unstructured
	listed := map[schema.GroupKind]bool{} // one kind at two versions is listed once
	for k := range kinds {
		if listed[k.GroupKind()] {
			continue
		}
		listed[k.GroupKind()] = true
		gvr, namespaced, err := p.applier.Resource(k)
		if err != nil {
			continue // a kind no longer served has nothing to prune
		}
		ns := parent.GetNamespace()
		if !namespaced {
			ns = "" // a cluster-scoped child (loom.yaml clusterScoped)
		}
		list, err := p.client.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			ref := object.RefOf(obj)
			ref.Cluster = p.name // where it is, whatever its annotation says
			if rendered[ref] || !object.IsChildOf(obj, parent) || obj.GetDeletionTimestamp() != nil {
				continue
			}
			out = append(out, obj)
		}
	}
	return out, nil
}

// print writes the unified diff of a child, if there is one, and reports
// whether there was.
func (d *differ) print(ref object.Ref, before, after *unstructured.Unstructured) (bool, error) {
	a, err := comparable(before)
	if err != nil {
		return false, err
	}
	b, err := comparable(after)
	if err != nil {
		return false, err
	}
	if a == b {
		return false, nil
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b),
		FromFile: diffPath("live", ref), ToFile: diffPath("rendered", ref), Context: 3,
	})
	if err != nil {
		return false, err
	}
	fmt.Fprint(d.out, text)
	return true, nil
}

// diffPath is the file name a child's diff is headed with: side ("live"
// or "rendered") then kind, namespace and name, and, for a child in a
// workload cluster, side@CLUSTER: "live@eu-1/ConfigMap/shop/web".
func diffPath(side string, ref object.Ref) string {
	if ref.Cluster != "" {
		side += "@" + ref.Cluster
	}
	ref.Cluster = ""
	return side + "/" + strings.ReplaceAll(ref.String(), " ", "/")
}

// comparable is an object as YAML without what changes on every write
// (resourceVersion, generation, managedFields) and without the hash Loom
// stamps, which changes with any change the diff already shows.
func comparable(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", nil
	}
	o := obj.DeepCopy()
	o.SetManagedFields(nil)
	o.SetResourceVersion("")
	o.SetGeneration(0)
	ann := o.GetAnnotations()
	delete(ann, apply.AnnotationApplied)
	if len(ann) == 0 {
		ann = nil // drops the field
	}
	o.SetAnnotations(ann)
	b, err := yaml.Marshal(o.Object)
	return string(b), err
}

// lines splits YAML into diff lines; none for an absent object.
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
