package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/object"
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

Use it before saving a template edit into the folder a running Loom watches:
Loom applies an edit to every parent at once.

Exit status: 0 when nothing would change; 1 when something would; 2 when
the diff itself failed (a template does not render, the cluster cannot be
reached, a request failed) or the command was used wrongly (an unknown
flag, no -t), so that a failure never reads as "something would change".`,
		Example: `  loom diff -t templates/myresource
  loom diff -t templates/myresource -n shop web
  loom diff -t templates/myresource -l tier=frontend --kubeconfig .cluster/kubeconfig`,
		RunE: func(cmd *cobra.Command, names []string) error {
			changed, err := runDiff(cmd.Context(), cmd.OutOrStdout(), o, names)
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
	_ = cmd.MarkFlagRequired("templates")
	return failsWith(cmd, exitTrouble) // 1 says something would change
}

// differ holds what one diff run needs.
type differ struct {
	client  dynamic.Interface
	applier *apply.Applier
	out     io.Writer
}

// runDiff diffs every selected parent and reports whether anything would
// change. A parent that fails is reported and counted, and the others are
// still diffed.
func runDiff(ctx context.Context, out io.Writer, o diffOptions, names []string) (bool, error) {
	set, err := render.Load(o.set)
	if err != nil {
		return false, fmt.Errorf("load template set %s: %w", o.set, err)
	}
	cfg, err := restConfig(o.kube)
	if err != nil {
		return false, err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	d := &differ{client: client, applier: apply.New(client, mapper, ""), out: out}
	gvr, _, err := d.applier.Resource(set.ParentGVK())
	if err != nil {
		return false, fmt.Errorf("parent kind %s: %w", set.ParentGVK(), err)
	}
	list, err := client.Resource(gvr).Namespace(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: o.selector})
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
		c, err := d.parent(ctx, set, parent)
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
func (d *differ) parent(ctx context.Context, set *render.Set, parent *unstructured.Unstructured) (bool, error) {
	title := fmt.Sprintf("%s %s/%s", parent.GetKind(), parent.GetNamespace(), parent.GetName())
	// The controller's own pipeline: a child that waits for another it
	// looked up is not applied, and neither it nor, while a file waits,
	// anything else is pruned.
	planned, err := pipeline.Plan(ctx, set, parent, &liveReader{ctx: ctx, d: d}, pipeline.Options{})
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
		if err := d.ownByNamespace(ctx, child); err != nil {
			return false, err
		}
		ref := object.RefOf(child)
		rendered[ref] = true
		kinds[child.GroupVersionKind()] = true
		before, err := d.live(ctx, child.GroupVersionKind(), ref)
		if err != nil {
			return false, err
		}
		after, err := d.applier.DryRun(ctx, child)
		if err != nil {
			return false, err
		}
		switch changed, err := d.print(ref, before, after); {
		case err != nil:
			return false, err
		case before == nil:
			counts[0]++
		case changed:
			counts[1]++
		default:
			counts[2]++
		}
	}
	if plan.Complete {
		pruned, err := d.prunable(ctx, parent, kinds, rendered)
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

// ownByNamespace gives a namespaced child to keep its Namespace as an
// owner, as the controller does before applying it.
func (d *differ) ownByNamespace(ctx context.Context, child *unstructured.Unstructured) error {
	ns := child.GetNamespace()
	if ns == "" || !object.IsOrphan(child.GetAnnotations()) {
		return nil
	}
	n, err := d.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read namespace %s, the owner of children to keep: %w", ns, err)
	}
	object.AddNamespaceOwner(child, n.GetUID())
	return nil
}

// live reads a child from the API server; nil when it does not exist.
func (d *differ) live(ctx context.Context, gvk schema.GroupVersionKind, ref object.Ref) (*unstructured.Unstructured, error) {
	gvr, _, err := d.applier.Resource(gvk)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", ref, err)
	}
	obj, err := d.client.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", ref, err)
	}
	return obj, nil
}

// prunable lists the parent's children that no longer render, the way
// Loom's prune finds them: the parent's ApplySet label and its UID as
// controller (or in loom.dev/owner, on a cluster-scoped child), over the
// kinds rendered now and those the status lists.
func (d *differ) prunable(ctx context.Context, parent *unstructured.Unstructured, kinds map[schema.GroupVersionKind]bool, rendered map[object.Ref]bool) ([]*unstructured.Unstructured, error) {
	for _, k := range status.ChildKinds(parent) {
		kinds[k] = true
	}
	selector := object.ChildSelector(parent)
	var out []*unstructured.Unstructured
	listed := map[schema.GroupKind]bool{} // one kind at two versions is listed once
	for k := range kinds {
		if listed[k.GroupKind()] {
			continue
		}
		listed[k.GroupKind()] = true
		gvr, namespaced, err := d.applier.Resource(k)
		if err != nil {
			continue // a kind no longer served has nothing to prune
		}
		ns := parent.GetNamespace()
		if !namespaced {
			ns = "" // a cluster-scoped child (loom.yaml clusterScoped)
		}
		list, err := d.client.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if rendered[object.RefOf(obj)] || !object.IsChildOf(obj, parent) || obj.GetDeletionTimestamp() != nil {
				continue
			}
			out = append(out, obj)
		}
	}
	sort.Slice(out, func(i, j int) bool { return object.RefOf(out[i]).String() < object.RefOf(out[j]).String() })
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
	name := strings.ReplaceAll(ref.String(), " ", "/")
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b),
		FromFile: "live/" + name, ToFile: "rendered/" + name, Context: 3,
	})
	if err != nil {
		return false, err
	}
	fmt.Fprint(d.out, text)
	return true, nil
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
