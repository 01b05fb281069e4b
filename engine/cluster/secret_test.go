package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// The Secret NewSecret makes is read back by FromSecret as the same
// registration, and what FromSecret would refuse is refused up front.
func TestNewSecret(t *testing.T) {
	tests := []struct {
		name    string
		cluster string
		labels  map[string]string
		kc      string
		want    Registration
		wantErr string // a substring of an error wrapping ErrInvalidRegistration
	}{{
		name: "labels kept", cluster: "w1", labels: map[string]string{"env": "prod"}, kc: "KUBECONFIG",
		want: Registration{Name: "w1", Labels: map[string]string{"env": "prod", LabelCluster: "w1"}, Kubeconfig: []byte("KUBECONFIG"),
			Source: SourceLoom, Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}},
	}, {
		name: "no labels", cluster: "w1", kc: "KUBECONFIG",
		want: Registration{Name: "w1", Labels: map[string]string{LabelCluster: "w1"}, Kubeconfig: []byte("KUBECONFIG"),
			Source: SourceLoom, Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}},
	}, {
		name: "the cluster label repeated", cluster: "w1", labels: map[string]string{LabelCluster: "w1"}, kc: "KUBECONFIG",
		want: Registration{Name: "w1", Labels: map[string]string{LabelCluster: "w1"}, Kubeconfig: []byte("KUBECONFIG"),
			Source: SourceLoom, Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}},
	}, {
		name: "the cluster label naming another cluster", cluster: "w1", labels: map[string]string{LabelCluster: "w2"}, kc: "KUBECONFIG",
		wantErr: "cluster w1: label loom.dev/cluster=w2 names another cluster",
	}, {
		name: "a name that is not DNS-1123", cluster: "Prod_EU", kc: "KUBECONFIG",
		wantErr: `cluster name "Prod_EU": a lowercase RFC 1123 subdomain`,
	}, {
		name: "an empty kubeconfig", cluster: "w1",
		wantErr: "cluster w1: empty kubeconfig",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSecret(tt.cluster, "loom-system", tt.labels, []byte(tt.kc))
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalidRegistration) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewSecret() error = %v, want one wrapping %v that says %q", err, ErrInvalidRegistration, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewSecret() error = %v", err)
			}
			got, ok, err := FromSecret(s, "loom-system")
			if err != nil || !ok {
				t.Fatalf("FromSecret(NewSecret()) = %v, %v, want a registration", ok, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromSecret(NewSecret()) (-want +got):\n%s", diff)
			}
		})
	}
}

// NewSecret does not change the labels it is given.
func TestNewSecretCopiesLabels(t *testing.T) {
	labels := map[string]string{"env": "prod"}
	if _, err := NewSecret("w1", "loom-system", labels, []byte("KUBECONFIG")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"env": "prod"}, labels); diff != "" {
		t.Errorf("labels after NewSecret (-want +got):\n%s", diff)
	}
}
