package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// kubeconfig is a usable kubeconfig with a token; the tests' kubeconfigs
// are it with one part replaced.
const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: w1
  cluster:
    server: https://127.0.0.1:36443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: secret-token
contexts:
- name: w1
  context: {cluster: w1, user: admin}
current-context: w1
`

// with returns kubeconfig with old replaced by new, failing if old is not in it.
func with(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(kubeconfig, old) {
		t.Fatalf("fixture has no %q", old)
	}
	return strings.Replace(kubeconfig, old, new, 1)
}

const execUser = `users:
- name: admin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
      args: [eks, get-token, --cluster-name, w1]
      interactiveMode: Never
`

const authProviderUser = `users:
- name: admin
  user:
    auth-provider:
      name: oidc
      config: {idp-issuer-url: "https://issuer.example", client-id: loom}
`

// otherExecUser is a second user, in no context, that runs a plugin.
const otherExecUser = `- name: other
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: gcloud, interactiveMode: Never}
`

func TestRESTConfig(t *testing.T) {
	usersBlock := "users:\n- name: admin\n  user:\n    token: secret-token\n"
	tests := []struct {
		name       string
		kubeconfig string
		opts       Options
		wantErr    error    // errors.Is; nil: no error
		wantMsg    []string // substrings of the error
		wantHost   string
		wantToken  string
		wantCert   string
		wantPlugin string // the exec plugin's command or the auth-provider's name in the config
	}{
		{name: "token", kubeconfig: kubeconfig, wantHost: "https://127.0.0.1:36443", wantToken: "secret-token"},
		{name: "client certificate data, as Cluster API writes it", kubeconfig: with(t, "token: secret-token", "{client-certificate-data: Y2VydA==, client-key-data: a2V5}"),
			wantHost: "https://127.0.0.1:36443", wantCert: "cert"},
		{name: "empty", kubeconfig: "", wantErr: ErrInvalidKubeconfig,
			wantMsg: []string{"cluster w1 (Secret loom-system/w1)", "empty"}},
		{name: "not YAML", kubeconfig: "clusters: [", wantErr: ErrInvalidKubeconfig,
			wantMsg: []string{"cluster w1 (Secret loom-system/w1)", "yaml: line 1"}},
		{name: "not a kubeconfig", kubeconfig: "hello", wantErr: ErrInvalidKubeconfig,
			wantMsg: []string{"cluster w1 (Secret loom-system/w1)", "couldn't get version/kind"}},
		{name: "no current-context", kubeconfig: with(t, "current-context: w1\n", ""), wantErr: ErrInvalidKubeconfig,
			wantMsg: []string{"cluster w1 (Secret loom-system/w1)", "no current-context"}},
		{name: "current-context names no context", kubeconfig: with(t, "current-context: w1", "current-context: w2"),
			wantErr: ErrInvalidKubeconfig, wantMsg: []string{`current-context "w2" is not among its contexts`}},
		{name: "context names no cluster", kubeconfig: with(t, "{cluster: w1,", "{cluster: w9,"),
			wantErr: ErrInvalidKubeconfig, wantMsg: []string{`context "w1" names cluster "w9", which it does not define`}},
		{name: "context names no user", kubeconfig: with(t, "user: admin}", "user: root}"),
			wantErr: ErrInvalidKubeconfig, wantMsg: []string{`context "w1" names user "root", which it does not define`}},
		{name: "cluster without a server", kubeconfig: with(t, "    server: https://127.0.0.1:36443\n", ""),
			wantErr: ErrInvalidKubeconfig, wantMsg: []string{"cluster w1 (Secret loom-system/w1)", "server"}},
		{name: "exec refused", kubeconfig: with(t, usersBlock, execUser), wantErr: ErrExecNotAllowed,
			wantMsg: []string{"cluster w1 (Secret loom-system/w1)", `user "admin" runs exec credential plugin "aws"`, "--allow-kubeconfig-exec"}},
		{name: "exec allowed", kubeconfig: with(t, usersBlock, execUser), opts: Options{AllowExec: true},
			wantHost: "https://127.0.0.1:36443", wantPlugin: "aws"},
		{name: "exec of a user not in use refused", kubeconfig: with(t, usersBlock, usersBlock+otherExecUser),
			wantErr: ErrExecNotAllowed, wantMsg: []string{`user "other" runs exec credential plugin "gcloud"`}},
		{name: "auth-provider refused", kubeconfig: with(t, usersBlock, authProviderUser), wantErr: ErrExecNotAllowed,
			wantMsg: []string{"cluster w1 (Secret loom-system/w1)", `user "admin" runs auth-provider "oidc"`, "--allow-kubeconfig-exec"}},
		{name: "auth-provider allowed", kubeconfig: with(t, usersBlock, authProviderUser), opts: Options{AllowExec: true},
			wantHost: "https://127.0.0.1:36443", wantPlugin: "oidc"},
		{name: "token file refused", kubeconfig: with(t, "token: secret-token", "tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token"),
			opts: Options{AllowExec: true}, wantErr: ErrInvalidKubeconfig,
			wantMsg: []string{"cluster w1 (Secret loom-system/w1)", `user "admin" names a file (tokenFile "/var/run/secrets/kubernetes.io/serviceaccount/token")`}},
		{name: "client certificate file refused", kubeconfig: with(t, "token: secret-token", "{client-certificate: /tls.crt, client-key-data: a2V5}"),
			wantErr: ErrInvalidKubeconfig, wantMsg: []string{`(client-certificate "/tls.crt")`}},
		{name: "client key file refused", kubeconfig: with(t, "token: secret-token", "{client-certificate-data: Y2VydA==, client-key: /tls.key}"),
			wantErr: ErrInvalidKubeconfig, wantMsg: []string{`(client-key "/tls.key")`}},
		{name: "certificate authority file refused", kubeconfig: with(t, "insecure-skip-tls-verify: true", "certificate-authority: /ca.crt"),
			wantErr: ErrInvalidKubeconfig, wantMsg: []string{`cluster "w1" names a file (certificate-authority "/ca.crt")`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := Registration{Name: "w1", Kubeconfig: []byte(tt.kubeconfig), Source: SourceLoom,
				Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}}
			got, err := RESTConfig(reg, tt.opts)
			if tt.wantErr != nil {
				t.Logf("error: %v", err)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("RESTConfig() error = %v, want one wrapping %v", err, tt.wantErr)
				}
				for _, s := range tt.wantMsg {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("RESTConfig() error = %q, want it to say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("RESTConfig() error = %v", err)
			}
			plugin := ""
			switch {
			case got.ExecProvider != nil:
				plugin = got.ExecProvider.Command
			case got.AuthProvider != nil:
				plugin = got.AuthProvider.Name
			}
			want := []string{tt.wantHost, tt.wantToken, tt.wantCert, tt.wantPlugin}
			if diff := cmp.Diff(want, []string{got.Host, got.BearerToken, string(got.CertData), plugin}); diff != "" {
				t.Errorf("RESTConfig() host, token, client certificate, plugin (-want +got):\n%s", diff)
			}
		})
	}
}
