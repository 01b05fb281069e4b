package clusteradmin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/loom-operator/loom/engine/cluster"
)

// FieldManager is the field manager of the registration Secrets Apply
// writes.
const FieldManager = "loom-cluster"

// NewRegistration is the Secret that registers cluster name in namespace
// (Loom's) with kubeconfig and labels (cluster.NewSecret), checked as
// Loom checks a registration: an error of cluster.RESTConfig, with its
// message, for what Loom would refuse.
func NewRegistration(name, namespace string, labels map[string]string, kubeconfig []byte, opts cluster.Options) (*corev1.Secret, error) {
	s, err := cluster.NewSecret(name, namespace, labels, kubeconfig)
	if err != nil {
		return nil, err
	}
	reg, _, err := cluster.FromSecret(s, namespace)
	if err != nil {
		return nil, err
	}
	if _, err := cluster.RESTConfig(reg, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// Result says what Apply did.
type Result string

const (
	// Registered is a Secret created.
	Registered Result = "registered"
	// Updated is a Secret changed.
	Updated Result = "updated"
	// Unchanged is a Secret that already said the same.
	Unchanged Result = "unchanged"
)

// Apply server-side applies s, a registration from NewRegistration, with
// secrets, the Secrets client of s's namespace, after checking that it may
// (checkTarget), and says whether that created, changed or left the
// Secret as it was.
func Apply(ctx context.Context, secrets corev1client.SecretInterface, s *corev1.Secret) (Result, error) {
	name := s.Labels[cluster.LabelCluster]
	before, err := checkTarget(ctx, secrets, name, s.Namespace)
	if err != nil {
		return "", err
	}
	ac := applycorev1.Secret(s.Name, s.Namespace).WithLabels(s.Labels).WithType(s.Type).WithData(s.Data)
	after, err := secrets.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return "", fmt.Errorf("apply Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	switch {
	case before == "":
		return Registered, nil
	case before == after.ResourceVersion:
		return Unchanged, nil
	}
	return Updated, nil
}

// checkTarget refuses what Apply must not write: a Secret name that is not
// name's Loom registration (a Secret of something else, a registration of
// another cluster, Cluster API's), and a second registration of name. It
// returns the resourceVersion of the Secret name if it is there ("" if
// not), to tell an update from no change.
func checkTarget(ctx context.Context, secrets corev1client.SecretInterface, name, ns string) (string, error) {
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: cluster.LabelCluster + "=" + name})
	if err != nil {
		return "", fmt.Errorf("list the registrations of cluster %s in namespace %s: %w", name, ns, err)
	}
	for _, s := range list.Items {
		if s.Name != name {
			return "", fmt.Errorf("cluster %s is already registered by Secret %s/%s: a second registration would make the name ambiguous (Loom would use neither); remove it first (loom cluster remove %s) or update it with kubectl",
				name, ns, s.Name, name)
		}
	}
	if capi, err := clusterAPIRegistration(ctx, secrets, name, ns); err != nil {
		return "", err
	} else if capi != "" {
		return "", fmt.Errorf("cluster %s is already registered by Cluster API's Secret %s/%s: a second registration would make the name ambiguous (Loom would use neither); Cluster API's needs no loom cluster add",
			name, ns, capi)
	}
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get Secret %s/%s: %w", ns, name, err)
	case s.Labels[cluster.LabelCluster] != name:
		return "", fmt.Errorf("the Secret %s/%s exists and is not the registration of cluster %s (its label %s is %q): Loom does not take over a Secret by its name; register the cluster under another name, or delete that Secret",
			ns, name, name, cluster.LabelCluster, s.Labels[cluster.LabelCluster])
	case s.Type == cluster.SecretTypeClusterAPI:
		return "", fmt.Errorf("the Secret %s/%s is Cluster API's (type %s), which Cluster API owns: loom cluster add does not write it", ns, name, s.Type)
	}
	return s.ResourceVersion, nil
}

// clusterAPIRegistration returns the name of Cluster API's Secret that
// registers cluster name in namespace ns, or "" if there is none.
func clusterAPIRegistration(ctx context.Context, secrets corev1client.SecretInterface, name, ns string) (string, error) {
	s, err := secrets.Get(ctx, name+"-kubeconfig", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get Secret %s/%s-kubeconfig: %w", ns, name, err)
	}
	if reg, ok, _ := cluster.FromSecret(s, ns); ok && reg.Name == name && reg.Source == cluster.SourceClusterAPI {
		return s.Name, nil
	}
	return "", nil
}

// Remove deletes the Secrets of namespace ns labelled
// cluster.LabelCluster=name (name's Loom registration; one, unless someone
// made two), and returns their names. It refuses, deleting nothing, a
// Secret of Cluster API's type that carries the label, and a cluster that
// only Cluster API registers, and fails when nothing registers name.
func Remove(ctx context.Context, secrets corev1client.SecretInterface, name, ns string) ([]string, error) {
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: cluster.LabelCluster + "=" + name})
	if err != nil {
		return nil, fmt.Errorf("list the registrations of cluster %s in namespace %s: %w", name, ns, err)
	}
	if len(list.Items) == 0 {
		capi, err := clusterAPIRegistration(ctx, secrets, name, ns)
		switch {
		case err != nil:
			return nil, err
		case capi != "":
			return nil, fmt.Errorf("cluster %s is registered by Cluster API's Secret %s/%s, which Cluster API owns: delete the Cluster, not its Secret",
				name, ns, capi)
		}
		return nil, fmt.Errorf("no registration of cluster %s in namespace %s (no Secret labelled %s=%s)", name, ns, cluster.LabelCluster, name)
	}
	for _, s := range list.Items {
		if s.Type == cluster.SecretTypeClusterAPI {
			return nil, fmt.Errorf("the Secret %s/%s, which registers cluster %s, is Cluster API's (type %s): remove its label %s instead of the Secret",
				s.Namespace, s.Name, name, s.Type, cluster.LabelCluster)
		}
	}
	var deleted []string
	for _, s := range list.Items {
		uid := s.UID
		err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("delete Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		deleted = append(deleted, s.Name)
	}
	return deleted, nil
}
