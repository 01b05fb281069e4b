package cluster

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// NewSecret is the Secret of a Loom registration, the one FromSecret reads
// back as Registration name: named name in namespace (Loom's), labelled
// LabelCluster=name beside labels, the kubeconfig under KeyKubeconfig. It
// checks what FromSecret would refuse (a name that is not a DNS-1123
// subdomain, an empty kubeconfig) and that labels does not set
// LabelCluster to another name, and leaves the kubeconfig as it is: check
// it with RESTConfig. kubeconfig is not copied.
func NewSecret(name, namespace string, labels map[string]string, kubeconfig []byte) (*corev1.Secret, error) {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("%w: cluster name %q: %s", ErrInvalidRegistration, name, strings.Join(errs, "; "))
	}
	if len(kubeconfig) == 0 {
		return nil, fmt.Errorf("%w: cluster %s: empty kubeconfig", ErrInvalidRegistration, name)
	}
	if v, ok := labels[LabelCluster]; ok && v != name {
		return nil, fmt.Errorf("%w: cluster %s: label %s=%s names another cluster", ErrInvalidRegistration, name, LabelCluster, v)
	}
	l := maps.Clone(labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelCluster] = name
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: l},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{KeyKubeconfig: kubeconfig},
	}, nil
}
