package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// secret turns an inline YAML Secret into a corev1.Secret, moving
// stringData into data as the API server does.
func secret(t *testing.T, doc string) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	for k, v := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	return &s
}

func TestFromSecret(t *testing.T) {
	tests := []struct {
		name    string
		secret  string
		want    Registration
		wantOK  bool
		wantErr string // a substring of an error wrapping ErrInvalidRegistration; "": no error
	}{{
		name: "loom registration",
		secret: `
metadata:
  name: prod-eu
  namespace: loom-system
  labels: {loom.dev/cluster: prod-eu-1, env: prod}
stringData: {kubeconfig: KUBECONFIG}`,
		wantOK: true,
		want: Registration{Name: "prod-eu-1", Labels: map[string]string{"loom.dev/cluster": "prod-eu-1", "env": "prod"},
			Kubeconfig: []byte("KUBECONFIG"), Source: SourceLoom, Secret: types.NamespacedName{Namespace: "loom-system", Name: "prod-eu"}},
	}, {
		name: "cluster api kubeconfig",
		secret: `
metadata:
  name: w1-kubeconfig
  namespace: loom-system
  labels: {cluster.x-k8s.io/cluster-name: w1}
type: cluster.x-k8s.io/secret
stringData: {value: KUBECONFIG}`,
		wantOK: true,
		want: Registration{Name: "w1", Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "w1"},
			Kubeconfig: []byte("KUBECONFIG"), Source: SourceClusterAPI, Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1-kubeconfig"}},
	}, {
		name: "loom label wins over the cluster api shape",
		secret: `
metadata:
  name: w1-kubeconfig
  namespace: loom-system
  labels: {cluster.x-k8s.io/cluster-name: w1, loom.dev/cluster: fleet-w1}
type: cluster.x-k8s.io/secret
stringData: {value: CAPI, kubeconfig: LOOM}`,
		wantOK: true,
		want: Registration{Name: "fleet-w1", Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "w1", "loom.dev/cluster": "fleet-w1"},
			Kubeconfig: []byte("LOOM"), Source: SourceLoom, Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1-kubeconfig"}},
	}, {
		name: "labelled in another namespace registers nothing",
		secret: `
metadata: {name: w1, namespace: tenant-a, labels: {loom.dev/cluster: w1}}
stringData: {kubeconfig: KUBECONFIG}`,
	}, {
		name: "cluster api kubeconfig in another namespace registers nothing",
		secret: `
metadata: {name: w1-kubeconfig, namespace: capi-clusters, labels: {cluster.x-k8s.io/cluster-name: w1}}
type: cluster.x-k8s.io/secret
stringData: {value: KUBECONFIG}`,
	}, {
		name: "an unlabelled secret registers nothing",
		secret: `
metadata: {name: w1, namespace: loom-system}
stringData: {kubeconfig: KUBECONFIG}`,
	}, {
		name: "cluster api CA secret registers nothing",
		secret: `
metadata: {name: w1-ca, namespace: loom-system, labels: {cluster.x-k8s.io/cluster-name: w1}}
type: cluster.x-k8s.io/secret
stringData: {tls.crt: CERT, tls.key: KEY}`,
	}, {
		name: "cluster api user kubeconfig registers nothing",
		secret: `
metadata: {name: w1-user-kubeconfig, namespace: loom-system, labels: {cluster.x-k8s.io/cluster-name: w1}}
type: cluster.x-k8s.io/secret
stringData: {value: KUBECONFIG}`,
	}, {
		name: "cluster api name without its type registers nothing",
		secret: `
metadata: {name: w1-kubeconfig, namespace: loom-system, labels: {cluster.x-k8s.io/cluster-name: w1}}
stringData: {value: KUBECONFIG}`,
	}, {
		name: "cluster api name of another cluster registers nothing",
		secret: `
metadata: {name: w2-kubeconfig, namespace: loom-system, labels: {cluster.x-k8s.io/cluster-name: w1}}
type: cluster.x-k8s.io/secret
stringData: {value: KUBECONFIG}`,
	}, {
		name: "loom registration without a kubeconfig",
		secret: `
metadata: {name: w1, namespace: loom-system, labels: {loom.dev/cluster: w1}}
stringData: {value: KUBECONFIG}`,
		wantErr: `cluster w1 (Secret loom-system/w1): no kubeconfig under key "kubeconfig"`,
	}, {
		name: "loom registration with an empty kubeconfig",
		secret: `
metadata: {name: w1, namespace: loom-system, labels: {loom.dev/cluster: w1}}
stringData: {kubeconfig: ""}`,
		wantErr: `cluster w1 (Secret loom-system/w1): no kubeconfig under key "kubeconfig"`,
	}, {
		name: "cluster api kubeconfig without its key",
		secret: `
metadata: {name: w1-kubeconfig, namespace: loom-system, labels: {cluster.x-k8s.io/cluster-name: w1}}
type: cluster.x-k8s.io/secret
stringData: {kubeconfig: KUBECONFIG}`,
		wantErr: `cluster w1 (Secret loom-system/w1-kubeconfig): no kubeconfig under key "value"`,
	}, {
		name: "loom registration with an empty name",
		secret: `
metadata: {name: w1, namespace: loom-system, labels: {loom.dev/cluster: ""}}
stringData: {kubeconfig: KUBECONFIG}`,
		wantErr: `Secret loom-system/w1: cluster name ""`,
	}, {
		name: "loom registration with a name that is not DNS-1123",
		secret: `
metadata: {name: w1, namespace: loom-system, labels: {loom.dev/cluster: Prod_EU}}
stringData: {kubeconfig: KUBECONFIG}`,
		wantErr: `Secret loom-system/w1: cluster name "Prod_EU": a lowercase RFC 1123 subdomain`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := FromSecret(secret(t, tt.secret), "loom-system")
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalidRegistration) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromSecret() error = %v, want one wrapping %v that says %q", err, ErrInvalidRegistration, tt.wantErr)
				}
				if ok {
					t.Errorf("FromSecret() ok = true with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("FromSecret() error = %v", err)
			}
			if ok != tt.wantOK {
				t.Fatalf("FromSecret() ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromSecret() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFromSecretCopiesLabels checks that a registration's labels are its
// own: the Secret comes from an informer's cache, which must not change.
func TestFromSecretCopiesLabels(t *testing.T) {
	s := secret(t, `
metadata: {name: w1, namespace: loom-system, labels: {loom.dev/cluster: w1, env: prod}}
stringData: {kubeconfig: KUBECONFIG}`)
	reg, ok, err := FromSecret(s, "loom-system")
	if err != nil || !ok {
		t.Fatalf("FromSecret() = %v, %v", ok, err)
	}
	reg.Labels["env"] = "dev"
	if got := s.Labels["env"]; got != "prod" {
		t.Errorf("the Secret's label env = %q after the registration's changed, want prod", got)
	}
}

func TestFromSecretNil(t *testing.T) {
	if _, ok, err := FromSecret(nil, "loom-system"); ok || err != nil {
		t.Errorf("FromSecret(nil) = %v, %v, want false, nil", ok, err)
	}
}

func TestIndex(t *testing.T) {
	reg := func(name, secret string) Registration {
		return Registration{Name: name, Secret: types.NamespacedName{Namespace: "loom-system", Name: secret}}
	}
	tests := []struct {
		name     string
		regs     []Registration
		want     []string // the names in the index
		wantErrs []string
	}{
		{name: "none"},
		{name: "distinct names", regs: []Registration{reg("w1", "w1"), reg("w2", "w2-kubeconfig")}, want: []string{"w1", "w2"}},
		{name: "one name, two secrets",
			regs: []Registration{reg("w2", "w2"), reg("w1", "w1-kubeconfig"), reg("w3", "w3"), reg("w1", "w1"), reg("w3", "w3-kubeconfig")},
			want: []string{"w2"},
			wantErrs: []string{
				"invalid cluster registration: cluster w1 is registered by more than one Secret: loom-system/w1, loom-system/w1-kubeconfig",
				"invalid cluster registration: cluster w3 is registered by more than one Secret: loom-system/w3, loom-system/w3-kubeconfig",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := Index(tt.regs)
			var names, msgs []string
			for _, name := range sortedKeys(got) {
				if got[name].Name != name {
					t.Errorf("Index()[%s] is cluster %s", name, got[name].Name)
				}
				names = append(names, name)
			}
			for _, err := range errs {
				if !errors.Is(err, ErrInvalidRegistration) {
					t.Errorf("Index() error %v does not wrap ErrInvalidRegistration", err)
				}
				msgs = append(msgs, err.Error())
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("Index() names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, msgs); diff != "" {
				t.Errorf("Index() errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFromSecrets checks that a listed Secret that cannot be read as a
// registration is reported and the others are still read, and that a
// Secret that registers nothing is left out.
func TestFromSecrets(t *testing.T) {
	secrets := []corev1.Secret{
		*secret(t, `
metadata: {name: w2, namespace: loom-system, labels: {loom.dev/cluster: w2}}
stringData: {kubeconfig: KUBECONFIG}`),
		*secret(t, `
metadata: {name: broken, namespace: loom-system, labels: {loom.dev/cluster: broken}}
stringData: {value: KUBECONFIG}`),
		*secret(t, `
metadata: {name: other, namespace: loom-system}
stringData: {kubeconfig: KUBECONFIG}`),
		*secret(t, `
metadata: {name: w1-kubeconfig, namespace: loom-system, labels: {cluster.x-k8s.io/cluster-name: w1}}
type: cluster.x-k8s.io/secret
stringData: {value: KUBECONFIG}`),
	}
	regs, errs := FromSecrets(secrets, "loom-system")
	var names []string
	for _, r := range regs {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"w2", "w1"}, names); diff != "" {
		t.Errorf("FromSecrets() names (-want +got):\n%s", diff)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrInvalidRegistration) || !strings.Contains(errs[0].Error(), "Secret loom-system/broken") {
		t.Errorf("FromSecrets() errors = %v, want one about Secret loom-system/broken", errs)
	}
}
