package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/chart"
	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/engine/render"
)

func newRenderCommand() *cobra.Command {
	var (
		setDir    string
		files     []string
		namespace string
		lookups   string
		output    string // -o
		// A chart set's .Capabilities, as helm template's flags.
		kubeVersion string
		apiVersions []string
		values      valuesFlags // --values, --set (rendervalues.go)
		showOnly    []string
		timeout     time.Duration
		loomNS      string
	)
	cmd := &cobra.Command{
		Use:   "render -t SET (-f PARENT.yaml [-f ...] | --values VALUES.yaml [--set K=V]) [--lookups OBJECTS.yaml]",
		Short: "Print the children a template set renders for parent objects",
		Long: `Render prints, as one YAML stream, exactly the objects that Loom would apply
for each parent: validated, with the namespace, controller ownerReference and
ApplySet labels injected. Like 'helm template', it needs no cluster. The
ownerReference's uid is filled in only when the parent has one. With -o json
or -o yaml it prints the same objects, in the same order, as one v1 List, as
'kubectl get -o json|yaml' prints several objects ('kubectl apply -f' reads
it; jq '.items[]' splits it); there, the children of a parent with no uid
have no ownerReference to it (the API server refuses one without a uid), and
a warning says so.

Templates' lookups find the objects in the --lookups file (a YAML stream or
a List, such as 'kubectl get -o yaml' prints); without it they find nothing.
An object that names no namespace is in the -n namespace, unless its kind is
a built-in cluster-scoped one or it says namespace: "". A lookup of a kind
loom.yaml does not declare finds only the parent's own children: for a
parent with a metadata.uid, objects whose controller ownerReference has it;
for one without (a file you wrote), the file's objects stand for its
children as they are.

As in the cluster, a child whose template looked up another child that is
not there or not ready yet is not applied, and so not printed: each one is
reported on stderr ("waiting: ConfigMap web-config waits for Deployment web:
not found yet"), as is each dependency cycle. A template file that fails
although everything it looked up is ready is an error.

When loom.yaml has a schema, each parent is first admitted as the API
server admits it on create: fields the schema does not know are pruned (a
warning names each, as kubectl prints it), defaults are applied, and a
parent the API server would refuse fails the render with the API server's
message, naming the file. The metadata and status stay as given.

When loom.yaml serves several versions of the parent (versions:), a parent
may be in any of them: it is converted to the version the CRD stores to be
admitted, then to the hub (parent.apiVersion's version), which the templates
read, as Loom converts it in the cluster. A version the set does not serve
is an error naming those it serves.

A chart set renders from Helm's inputs too, with no parent file: --values
files and --set values, merged as helm template merges them, are the spec
of one parent named --name (helm template's NAME) in the -n namespace.
-f keeps kubectl's meaning (a file of objects: here, parents), so Helm's
-f is spelled --values here. Each document follows a '# Source:' comment
naming its template (web/templates/deployment.yaml for a chart), as helm
template prints them, and --show-only keeps those of the templates it
names (templates/deployment.yaml, as helm template takes it).

The Secrets of the --lookups file in --loom-namespace that register workload
clusters (labelled loom.dev/cluster, or Cluster API's <cluster>-kubeconfig)
are the registered clusters: templates see those loom.yaml's clusters allows
as .Clusters, and a child whose loom.dev/cluster annotation names another is
an error. Each child's cluster is in that annotation in the output; a child
without it goes to the cluster Loom runs in. No kubeconfig is read.

Each parent's render stops after --timeout, as a render in the cluster
stops at half the reconcile timeout: a template that loops for ever fails
with the line of the loop.

` + exitStatusPlain,
		Example: `  loom render -t templates/myresource -f examples/myresource.yaml
  loom render -t templates/myresource -f examples/myresource.yaml -f examples/myresource-full.yaml
  loom render -t templates/myresource -f examples/myresource.yaml -o json | jq -r '.items[].kind'
  kubectl get myresource web -o yaml | loom render -t templates/myresource -f -

  # Answer lookups from what the cluster holds:
  kubectl get configmap,deployment -n shop -o yaml > live.yaml
  loom render -t templates/myresource -f examples/myresource.yaml -n shop --lookups live.yaml

  # A chart set from Helm's inputs, as helm template would render them:
  loom render -t sets/podinfo --values my-values.yaml --set replicaCount=3 --name web
  loom render -t sets/podinfo --values my-values.yaml --show-only templates/deployment.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkParentInputs(files, &values); err != nil {
				return err
			}
			set, err := render.Load(setDir)
			if err != nil {
				return fmt.Errorf("load template set %s: %w", setDir, err)
			}
			if lookups == "-" && slices.Contains(files, "-") {
				return errors.New("-f - and --lookups - cannot both read stdin")
			}
			var reader render.Reader // nil, not a nil *ObjectsReader: lookups find nothing
			var objs *render.ObjectsReader
			if lookups != "" {
				r, err := openFile(cmd.InOrStdin(), lookups)
				if err != nil {
					return err
				}
				objs, err = offline.ReadLookups(r, namespace)
				r.Close()
				if err != nil {
					return fmt.Errorf("read %s: %w", lookups, err)
				}
				reader = objs
			}
			if kubeVersion != "" || len(apiVersions) > 0 {
				caps, err := chart.CapabilitiesWith(kubeVersion, apiVersions)
				if err != nil {
					return err
				}
				if objs == nil {
					objs = render.NewObjectsReader(nil)
					reader = objs
				}
				objs.Caps = caps
			}
			clusters, err := offline.Clusters(reader, loomNS)
			if err != nil {
				return fmt.Errorf("read %s: %w", lookups, err)
			}
			ad, err := offline.NewAdmission(set)
			if err != nil {
				return err
			}
			paths, err := expandFilenames(files)
			if err != nil {
				return err
			}
			var all []*unstructured.Unstructured
			var sources []string
			var noUID []string // parents with no metadata.uid, for -o
			if values.given() {
				paths = []string{values.label()}
			}
			for _, f := range paths {
				var docs []*unstructured.Unstructured
				if values.given() {
					p, err := values.parent(cmd.InOrStdin(), set, namespace)
					if err != nil {
						return err
					}
					docs = append(docs, p)
				} else if docs, err = readParents(cmd.InOrStdin(), f); err != nil {
					return err
				}
				name := f
				if f == "-" {
					name = "stdin"
				}
				parents, err := offline.CheckParents(set, name, docs)
				if err != nil {
					return err
				}
				for _, p := range parents {
					if p.GetUID() == "" {
						noUID = append(noUID, fmt.Sprintf("%s %s/%s", p.GetKind(), cmp.Or(p.GetNamespace(), namespace), p.GetName()))
					}
				}
				warnings, err := ad.Admit(f, parents)
				for _, w := range warnings {
					fmt.Fprintln(cmd.ErrOrStderr(), "Warning:", w)
				}
				if err != nil {
					return err
				}
				out, err := offline.RenderParents(set, parents, reader, clusters, namespace, timeout)
				if err != nil {
					return err
				}
				all = append(all, out.Children...)
				sources = append(sources, out.Sources...)
				for _, h := range out.Held {
					fmt.Fprintln(cmd.ErrOrStderr(), h)
				}
			}
			if output != "" {
				for _, p := range noUID {
					fmt.Fprintf(cmd.ErrOrStderr(), "Warning: %s has no metadata.uid: -o %s prints its children without their ownerReference to it, which the API server refuses without a uid\n", p, output)
				}
				dropOwnersWithoutUID(all)
				return printObjects(cmd.OutOrStdout(), output, all)
			}
			return writeSources(cmd.OutOrStdout(), all, sources, showOnly)
		},
	}
	cmd.Flags().StringVarP(&setDir, "templates", "t", "", "the template set's folder (holds loom.yaml)")
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "a YAML file of parent objects, or a folder of them (its .yaml, .yml and .json files); repeatable; - reads stdin")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace for parents, and lookup objects, that name none")
	cmd.Flags().StringVar(&lookups, "lookups", "", "a YAML file of the objects templates' lookups find; - reads stdin (default: they find nothing)")
	cmd.Flags().StringVar(&kubeVersion, "kube-version", "", "a chart set's .Capabilities.KubeVersion, as helm template's (default: Helm SDK's)")
	cmd.Flags().StringSliceVarP(&apiVersions, "api-versions", "a", nil, "API versions a chart set's .Capabilities.APIVersions has besides Helm SDK's defaults, as helm template's; repeatable")
	values.register(cmd.Flags())
	cmd.Flags().StringArrayVarP(&showOnly, "show-only", "s", nil, "print only the objects rendered from this template (templates/x.yaml in a chart, x.yaml in a set), as helm template's; repeatable")
	cmd.Flags().DurationVar(&timeout, "timeout", offline.DefaultTimeout, "stop a parent's render after this long (a template that loops for ever); 0 means no limit")
	cmd.Flags().StringVar(&loomNS, "loom-namespace", offline.DefaultLoomNamespace, "Loom's namespace: the --lookups file's Secrets in it register workload clusters")
	addOutputFlag(cmd, &output, "a YAML stream, each document after a # Source: comment")
	_ = cmd.MarkFlagRequired("templates")
	_ = cmd.MarkFlagDirname("templates")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("lookups", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("values", "yaml", "yml", "json")
	return cmd
}

// openFile opens path, or stdin for "-".
func openFile(stdin io.Reader, path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(stdin), nil
	}
	return os.Open(path)
}

// dropOwnersWithoutUID removes from objs the ownerReferences that have no
// uid, which the API server refuses: a parent read from a file written by
// hand has none.
func dropOwnersWithoutUID(objs []*unstructured.Unstructured) {
	for _, o := range objs {
		refs := o.GetOwnerReferences()
		kept := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return r.UID == "" })
		if len(kept) == len(refs) {
			continue
		}
		if len(kept) == 0 {
			unstructured.RemoveNestedField(o.Object, "metadata", "ownerReferences")
			continue
		}
		o.SetOwnerReferences(kept)
	}
}

// parentExts are the files that -f DIR reads, as kubectl -f DIR does.
var parentExts = []string{".yaml", ".yml", ".json"}

// expandFilenames replaces each folder in files by the files in it whose
// names end in parentExts, in name order (not recursively, as kubectl
// without -R).
func expandFilenames(files []string) ([]string, error) {
	var out []string
	for _, f := range files {
		fi, err := os.Stat(f)
		if f == "-" || err != nil || !fi.IsDir() {
			out = append(out, f) // opening it says what is wrong
			continue
		}
		entries, err := os.ReadDir(f)
		if err != nil {
			return nil, err
		}
		n := len(out)
		for _, e := range entries {
			if !e.IsDir() && slices.Contains(parentExts, filepath.Ext(e.Name())) {
				out = append(out, filepath.Join(f, e.Name()))
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s holds no .yaml, .yml or .json files", f)
		}
	}
	return out, nil
}

func readParents(stdin io.Reader, path string) ([]*unstructured.Unstructured, error) {
	r, err := openFile(stdin, path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	parents, err := render.ReadParents(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return parents, nil
}
