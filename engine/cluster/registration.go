package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// LabelCluster, on a Secret in Loom's namespace, registers a workload
// cluster: its value is the cluster's name, the name a child's
// loom.dev/cluster annotation and a set's loom.yaml use.
const LabelCluster = "loom.dev/cluster"

// KeyKubeconfig is the key of a Loom registration's Secret that holds the
// kubeconfig. It is "kubeconfig", the file's own name, as `kubectl create
// secret generic NAME --from-file=kubeconfig=FILE` writes it; Flux reads
// "value" or "value.yaml" because it follows Cluster API, whose Secrets
// FromSecret reads under KeyClusterAPIKubeconfig as they are.
const KeyKubeconfig = "kubeconfig"

// SecretTypeClusterAPI is the type Cluster API gives the Secrets it writes
// for a cluster (the kubeconfig, and also its CA, etcd and service-account
// keys, which FromSecret tells apart by name).
const SecretTypeClusterAPI corev1.SecretType = "cluster.x-k8s.io/secret"

// LabelClusterAPIName is the label Cluster API sets on a cluster's Secrets
// to the cluster's name.
const LabelClusterAPIName = "cluster.x-k8s.io/cluster-name"

// KeyClusterAPIKubeconfig is the key of Cluster API's kubeconfig Secret
// that holds the kubeconfig.
const KeyClusterAPIKubeconfig = "value"

// suffixClusterAPIKubeconfig ends the name of Cluster API's kubeconfig
// Secret, "<cluster>-kubeconfig".
const suffixClusterAPIKubeconfig = "-kubeconfig"

// Source says how a cluster was registered.
type Source string

const (
	// SourceLoom is a Secret labelled LabelCluster.
	SourceLoom Source = "loom"
	// SourceClusterAPI is Cluster API's "<cluster>-kubeconfig" Secret.
	SourceClusterAPI Source = "cluster-api"
)

// Registration is one registered workload cluster.
type Registration struct {
	// Name is the cluster's name: LabelCluster's value, or Cluster API's
	// cluster name.
	Name string
	// Labels are the Secret's labels (a copy), what a set's label selector
	// on clusters matches.
	Labels map[string]string
	// Kubeconfig is the kubeconfig file, as the Secret holds it: the
	// Secret's own bytes, not a copy, so never change them (the Secret may
	// be an informer cache's).
	Kubeconfig []byte
	// Source says how the cluster was registered.
	Source Source
	// Secret is the Secret the registration was read from, for errors and
	// events that must say which Secret to fix.
	Secret types.NamespacedName
}

// ErrInvalidRegistration is wrapped by FromSecret's errors: a Secret that
// registers a cluster but cannot be read as a registration. Retrying does
// not help; fixing the Secret does.
var ErrInvalidRegistration = errors.New("invalid cluster registration")

// FromSecret reads the registration a Secret makes, if any. namespace is
// Loom's namespace: a Secret in any other namespace registers nothing.
// It returns ok false, and no error, for a Secret that is not a
// registration, and an error wrapping ErrInvalidRegistration for one that
// is (labelled LabelCluster, or shaped as Cluster API's kubeconfig Secret)
// but has no valid name or no kubeconfig. LabelCluster wins over the
// Cluster API shape on a Secret that has both.
func FromSecret(s *corev1.Secret, namespace string) (reg Registration, ok bool, err error) {
	if s == nil || s.Namespace != namespace {
		return Registration{}, false, nil
	}
	ref := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	name, key, source := "", "", Source("")
	if v, labelled := s.Labels[LabelCluster]; labelled {
		name, key, source = v, KeyKubeconfig, SourceLoom
	} else if v, capi := clusterAPIName(s); capi {
		name, key, source = v, KeyClusterAPIKubeconfig, SourceClusterAPI
	} else {
		return Registration{}, false, nil
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return Registration{}, false, fmt.Errorf("%w: Secret %s: cluster name %q: %s",
			ErrInvalidRegistration, ref, name, strings.Join(errs, "; "))
	}
	kubeconfig := s.Data[key]
	if len(kubeconfig) == 0 {
		return Registration{}, false, fmt.Errorf("%w: cluster %s (Secret %s): no kubeconfig under key %q",
			ErrInvalidRegistration, name, ref, key)
	}
	return Registration{
		Name:       name,
		Labels:     maps.Clone(s.Labels),
		Kubeconfig: kubeconfig,
		Source:     source,
		Secret:     ref,
	}, true, nil
}

// clusterAPIName returns the cluster's name if s is Cluster API's
// kubeconfig Secret: of type SecretTypeClusterAPI, labelled
// LabelClusterAPIName, and named "<that name>-kubeconfig" (which tells it
// from the same cluster's "-ca", "-etcd", "-sa" and "-user-kubeconfig"
// Secrets).
func clusterAPIName(s *corev1.Secret) (string, bool) {
	if s.Type != SecretTypeClusterAPI {
		return "", false
	}
	name, labelled := s.Labels[LabelClusterAPIName]
	if !labelled || s.Name != name+suffixClusterAPIKubeconfig {
		return "", false
	}
	return name, true
}

// Index returns the registrations by name. Two Secrets that register the
// same name make it ambiguous which cluster the name means, so neither is
// in the index, and an error wrapping ErrInvalidRegistration names the
// cluster and both Secrets (one error per such name, in name order):
// children are never sent to whichever Secret happens to be read last.
func Index(regs []Registration) (map[string]Registration, []error) {
	byName := make(map[string]Registration, len(regs))
	secrets := map[string][]string{}
	for _, reg := range regs {
		byName[reg.Name] = reg
		secrets[reg.Name] = append(secrets[reg.Name], reg.Secret.String())
	}
	var errs []error
	for _, name := range sortedKeys(secrets) {
		if refs := secrets[name]; len(refs) > 1 {
			delete(byName, name)
			slices.Sort(refs)
			errs = append(errs, fmt.Errorf("%w: cluster %s is registered by more than one Secret: %s",
				ErrInvalidRegistration, name, strings.Join(refs, ", ")))
		}
	}
	return byName, errs
}

// FromSecrets reads the registrations of secrets, Secrets of Loom's
// namespace listed by a client (loom diff's; the controller's registry
// reads its informers' stores one Secret at a time): those FromSecret
// reads, in the order given, and an error for each Secret that registers a
// cluster but cannot be read as a registration, for the caller to report
// while it uses the others, as the controller does.
func FromSecrets(secrets []corev1.Secret, namespace string) ([]Registration, []error) {
	var regs []Registration
	var errs []error
	for i := range secrets {
		reg, ok, err := FromSecret(&secrets[i], namespace)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			regs = append(regs, reg)
		}
	}
	return regs, errs
}
