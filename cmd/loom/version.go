package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/loom-operator/loom/internal/version"
)

// The labels Loom's Helm chart puts on its Deployment, which loom version
// reads the running installations by.
const (
	labelName    = "app.kubernetes.io/name"
	labelVersion = "app.kubernetes.io/version"
	// loomSelector selects the Deployments of Loom's installations.
	loomSelector = labelName + "=loom"
	// loomContainer names Loom's container in the chart's pod template.
	loomContainer = "loom"
)

// deploymentsGVR is what loom version lists.
var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// versionReport is what loom version prints; its JSON field names are the
// -o json|yaml document's, so they only ever get added to.
type versionReport struct {
	// Client is this binary's build.
	Client version.Info `json:"client"`
	// Servers are Loom's installations in the cluster, sorted by namespace
	// and name: [] when there is none, absent with --client or when the
	// cluster could not be read.
	Servers []serverVersion `json:"servers,omitzero"`
}

// serverVersion is one installation of Loom: a Deployment labelled
// app.kubernetes.io/name=loom.
type serverVersion struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Version is the Deployment's app.kubernetes.io/version label (the pod
	// template's when the Deployment has none); empty when neither has it.
	Version string `json:"version"`
	// Image is the image of the container named loom, else of the first.
	Image         string `json:"image"`
	ReadyReplicas int32  `json:"readyReplicas"`
	// Replicas is the desired number of pods (spec.replicas, 1 unset).
	Replicas int32 `json:"replicas"`
}

// versionOptions holds loom version's flags and what it reaches the
// cluster with.
type versionOptions struct {
	clientOnly bool
	kube       kubeTarget
	namespace  string
	output     string
	timeout    time.Duration
	// newClient returns the client for --kubeconfig, whose requests give
	// up after timeout; tests return a fake.
	newClient func(kube kubeTarget, timeout time.Duration) (dynamic.Interface, error)
}

// newVersionCommand is loom version, reaching the cluster of --kubeconfig.
func newVersionCommand() *cobra.Command {
	return versionCommand(&versionOptions{newClient: func(kube kubeTarget, timeout time.Duration) (dynamic.Interface, error) {
		cfg, err := restConfig(kube)
		if err != nil {
			return nil, err
		}
		cfg.Timeout = timeout
		return dynamic.NewForConfig(cfg)
	}})
}

// versionCommand builds loom version around o.
func versionCommand(o *versionOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of this loom, and of the Loom installations in the cluster",
		Long: `Version prints this binary's version (the release version it was built as,
or the module version the Go toolchain stamped, "(devel)" without one), the
commit it was built from, and its Go version and platform.

Unless --client is given, it also lists the Deployments labelled
app.kubernetes.io/name=loom (as Loom's Helm chart labels it), in every
namespace or in -n's, and prints for each its namespace and name, its
app.kubernetes.io/version label, the image of its loom container, and its
ready and desired replicas. It uses --kubeconfig, then $KUBECONFIG, then
the in-cluster config, and needs list on deployments.apps. With --client it
reads no kubeconfig and sends no request.

-o json and -o yaml print {"client": {...}, "servers": [...]}: servers is []
when no installation was found, and absent with --client or when the
cluster could not be read.

Exit status: 0 when it printed the client's version and, unless --client,
the installations (none found is not an error); 1 when the cluster could
not be read (no kubeconfig, unreachable, forbidden: the client's version is
still printed on stdout, the reason on stderr), or the command was used
wrongly (an unknown flag or -o value, an argument).`,
		Example: `  loom version
  loom version --client
  loom version -n loom-system -o json | jq -r '.servers[].version'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			report := versionReport{Client: version.Get()}
			var err error
			if !o.clientOnly {
				report.Servers, err = o.servers(cmd.Context())
			}
			if perr := o.print(cmd.OutOrStdout(), report); perr != nil {
				return perr
			}
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.clientOnly, "client", false, "print only this binary's version; read no kubeconfig, send no request")
	o.kube.register(f, "")
	f.StringVarP(&o.namespace, "namespace", "n", "", "look for Loom's Deployments in this namespace only (default: all)")
	f.DurationVar(&o.timeout, "request-timeout", 10*time.Second, "give up on the cluster after this long")
	addOutputFlag(cmd, &o.output, "text")
	return cmd
}

// servers lists Loom's installations, sorted by namespace and name; never
// nil without an error.
func (o *versionOptions) servers(ctx context.Context) ([]serverVersion, error) {
	where := "in all namespaces"
	if o.namespace != "" {
		where = "in namespace " + o.namespace
	}
	c, err := o.newClient(o.kube, o.timeout)
	if err != nil {
		return nil, fmt.Errorf("read Loom's installations: %w", err)
	}
	list, err := c.Resource(deploymentsGVR).Namespace(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: loomSelector})
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("list deployments labelled %s %s: %w (loom version needs list on deployments.apps; try -n NAMESPACE, or --client)", loomSelector, where, err)
	}
	if err != nil {
		return nil, fmt.Errorf("list deployments labelled %s %s: %w", loomSelector, where, err)
	}
	servers := make([]serverVersion, 0, len(list.Items))
	for _, u := range list.Items {
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			return nil, fmt.Errorf("decode Deployment %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		servers = append(servers, serverOf(&d))
	}
	sort.Slice(servers, func(i, j int) bool {
		if servers[i].Namespace != servers[j].Namespace {
			return servers[i].Namespace < servers[j].Namespace
		}
		return servers[i].Name < servers[j].Name
	})
	return servers, nil
}

// serverOf is what loom version reports of Deployment d.
func serverOf(d *appsv1.Deployment) serverVersion {
	s := serverVersion{Namespace: d.Namespace, Name: d.Name, Version: d.Labels[labelVersion],
		ReadyReplicas: d.Status.ReadyReplicas, Replicas: 1}
	if s.Version == "" {
		s.Version = d.Spec.Template.Labels[labelVersion]
	}
	if d.Spec.Replicas != nil {
		s.Replicas = *d.Spec.Replicas
	}
	for i, c := range d.Spec.Template.Spec.Containers {
		if i == 0 || c.Name == loomContainer {
			s.Image = c.Image
		}
		if c.Name == loomContainer {
			break
		}
	}
	return s
}

// print writes r in o's format; the default is text.
func (o *versionOptions) print(w io.Writer, r versionReport) error {
	if o.output != "" {
		return printDocument(w, o.output, r)
	}
	fmt.Fprintf(w, "Client: %s\n", r.Client)
	switch {
	case r.Servers == nil:
		return nil
	case len(r.Servers) == 0:
		where := "in any namespace"
		if o.namespace != "" {
			where = "in namespace " + o.namespace
		}
		_, err := fmt.Fprintf(w, "Servers: none (no Deployment labelled %s %s)\n", loomSelector, where)
		return err
	}
	fmt.Fprintf(w, "Servers (Deployments labelled %s):\n", loomSelector)
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tVERSION\tIMAGE\tREADY")
	for _, s := range r.Servers {
		v := s.Version
		if v == "" {
			v = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Namespace, s.Name, v, s.Image,
			strconv.Itoa(int(s.ReadyReplicas))+"/"+strconv.Itoa(int(s.Replicas)))
	}
	return tw.Flush()
}
