package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/engine/object"
)

// suspendFieldManager names loom suspend and loom resume in the
// managedFields of what they write: the annotation, or the TemplateSet's
// spec.suspend. Loom's own field manager never writes either.
const suspendFieldManager = "loom-suspend"

// suspendOptions holds the flags of loom suspend and loom resume and what
// they reach the cluster with.
type suspendOptions struct {
	kube      kubeTarget
	namespace string
	all       bool
	selector  string
	set       string
	// connect returns the client, the RESTMapper and the kubeconfig's
	// namespace for --kubeconfig; tests return fakes.
	connect func(kube kubeTarget) (dynamic.Interface, meta.RESTMapper, string, error)
}

// newSuspendCommands are loom suspend and loom resume, reaching the
// cluster of --kubeconfig.
func newSuspendCommands() []*cobra.Command {
	return []*cobra.Command{suspendCommand(&suspendOptions{connect: connectCluster}, true),
		suspendCommand(&suspendOptions{connect: connectCluster}, false)}
}

// connectCluster is a dynamic client, a discovery RESTMapper and the
// context's namespace for --kubeconfig.
func connectCluster(kube kubeTarget) (dynamic.Interface, meta.RESTMapper, string, error) {
	cfg, err := restConfig(kube)
	if err != nil {
		return nil, nil, "", err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, "", err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, "", err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kube.Path
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kube.Context}).Namespace()
	if err != nil {
		ns = "default"
	}
	return client, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)), ns, nil
}

// suspendCommand builds loom suspend (suspend true) or loom resume around o.
func suspendCommand(o *suspendOptions, suspend bool) *cobra.Command {
	verb, done := "resume", "resumed"
	short := "Let Loom write a suspended parent's children again, or every parent of a set"
	long := `Resume removes the annotation loom.dev/suspend from each parent named, or,
with --set, clears spec.suspend on the TemplateSet SET. Loom reconciles the
parent at once: the spec changes made while it was suspended are applied,
drift is repaired and children that no longer render are pruned.`
	if suspend {
		verb, done = "suspend", "suspended"
		short = "Stop every write Loom makes for a parent's children, or for every parent of a set"
		long = `Suspend sets the annotation loom.dev/suspend: "true" on each parent named, or,
with --set, spec.suspend: true on the TemplateSet SET (every parent of that
set). Loom then writes none of the parent's children: no apply, create,
prune or release, no finalizer change, no chart hook, in the cluster Loom runs
in or in a workload cluster. It still reads them and writes the parent's
status, whose Suspended condition says where the suspension comes from and
whose state is Suspended. Deleting a suspended parent deletes it as usual.
loom resume undoes it.`
	}
	cmd := &cobra.Command{
		Use:   verb + " (KIND/NAME... | KIND --all | KIND -l SELECTOR | --set SET)",
		Short: short,
		Long: long + `

KIND is the parent's kind or resource, with its group when two groups serve
it (myresource, myresources, myresource.example.loom.dev). The write is a
merge patch under the field manager loom-suspend, which Loom's own applies
never take over. A TemplateSet exists for a set with a rollout policy.

` + exitStatusPlain,
		Example: fmt.Sprintf(`  loom %[1]s myresource/web -n team-a
  loom %[1]s myresource --all -n team-a
  loom %[1]s myresource -l tier=frontend -n team-a
  loom %[1]s --set myresource`, verb),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), args, suspend, done)
		},
	}
	o.kube.register(cmd.Flags(), "")
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "the parents' namespace (default: the kubeconfig context's)")
	cmd.Flags().BoolVar(&o.all, "all", false, "every parent of KIND in the namespace")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "the parents of KIND in the namespace that this label selector selects")
	cmd.Flags().StringVar(&o.set, "set", "", "the TemplateSet (named after the set's folder) whose spec.suspend to "+map[bool]string{true: "set", false: "clear"}[suspend])
	return cmd
}

// run writes the suspension (suspend) or removes it, and prints a line
// per object, ending in done.
func (o *suspendOptions) run(ctx context.Context, out io.Writer, args []string, suspend bool, done string) error {
	if err := o.check(args); err != nil {
		return err
	}
	client, mapper, ns, err := o.connect(o.kube)
	if err != nil {
		return err
	}
	if o.set != "" {
		return o.patchSet(ctx, out, client, suspend, done)
	}
	if o.namespace != "" {
		ns = o.namespace
	}
	targets, err := o.targets(ctx, client, mapper, ns, args)
	if err != nil {
		return err
	}
	var value any // null removes the annotation
	if suspend {
		value = "true"
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{object.AnnotationSuspend: value}}})
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range targets {
		if _, err := t.res.Patch(ctx, t.name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: suspendFieldManager}); err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", t.resource, t.name, err))
			continue
		}
		fmt.Fprintf(out, "%s/%s %s\n", t.resource, t.name, done)
	}
	return errors.Join(errs...)
}

// check refuses arguments that name no parent, or two ways at once.
func (o *suspendOptions) check(args []string) error {
	switch {
	case o.set != "" && (len(args) > 0 || o.all || o.selector != ""):
		return errors.New("--set names a TemplateSet: it takes no KIND/NAME, --all or --selector")
	case o.set != "":
		return nil
	case len(args) == 0:
		return errors.New("name the parents (KIND/NAME..., KIND --all or KIND -l SELECTOR) or a set (--set SET)")
	case o.all && o.selector != "":
		return errors.New("--all and --selector: pass one")
	case (o.all || o.selector != "") && (len(args) != 1 || strings.Contains(args[0], "/")):
		return errors.New("--all and --selector take one KIND, without a name")
	case !o.all && o.selector == "":
		for _, a := range args {
			if k, n, ok := strings.Cut(a, "/"); !ok || k == "" || n == "" {
				return fmt.Errorf("%q is not KIND/NAME (or pass KIND with --all or --selector)", a)
			}
		}
	}
	return nil
}

// target is one parent to patch.
type target struct {
	res      dynamic.ResourceInterface
	resource string // as printed: the resource's plural
	name     string
}

// targets resolves args to the parents to patch, in namespace ns.
func (o *suspendOptions) targets(ctx context.Context, client dynamic.Interface, mapper meta.RESTMapper, ns string, args []string) ([]target, error) {
	var out []target
	for _, a := range args {
		kind, name, _ := strings.Cut(a, "/")
		res, plural, err := resourceOf(client, mapper, kind, ns)
		if err != nil {
			return nil, err
		}
		if name != "" {
			out = append(out, target{res: res, resource: plural, name: name})
			continue
		}
		list, err := res.List(ctx, metav1.ListOptions{LabelSelector: o.selector})
		if err != nil {
			return nil, fmt.Errorf("list %s in %s: %w", plural, ns, err)
		}
		for _, p := range list.Items {
			out = append(out, target{res: res, resource: plural, name: p.GetName()})
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no %s in namespace %s match", plural, ns)
		}
	}
	return out, nil
}

// resourceOf maps a KIND argument (kind or resource, singular or plural,
// optionally .group) to its resource in namespace ns (none when it is
// cluster-scoped).
func resourceOf(client dynamic.Interface, mapper meta.RESTMapper, kind, ns string) (dynamic.ResourceInterface, string, error) {
	partial := schema.ParseGroupResource(strings.ToLower(kind)).WithVersion("")
	gvr, err := mapper.ResourceFor(partial)
	if err != nil {
		return nil, "", fmt.Errorf("kind %s: %w", kind, err)
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return nil, "", fmt.Errorf("kind %s: %w", kind, err)
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, "", fmt.Errorf("kind %s: %w", kind, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return client.Resource(gvr), gvr.Resource, nil
	}
	return client.Resource(gvr).Namespace(ns), gvr.Resource, nil
}

// patchSet sets or clears spec.suspend on the TemplateSet o.set.
func (o *suspendOptions) patchSet(ctx context.Context, out io.Writer, client dynamic.Interface, suspend bool, done string) error {
	var value any // null clears it
	if suspend {
		value = true
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"suspend": value}})
	if err != nil {
		return err
	}
	_, err = client.Resource(v1alpha1.TemplateSetGVR).Patch(ctx, o.set, types.MergePatchType, body, metav1.PatchOptions{FieldManager: suspendFieldManager})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("templateset/%s: not found: Loom keeps a TemplateSet for a set with a rollout policy; suspend another set with suspend: true in its loom.yaml, or its parents with KIND --all", o.set)
	}
	if err != nil {
		return fmt.Errorf("templateset/%s: %w", o.set, err)
	}
	fmt.Fprintf(out, "templateset/%s %s\n", o.set, done)
	return nil
}
