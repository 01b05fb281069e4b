package clusteradmin

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/internal/testutil"
)

// twoContexts is a kubeconfig of two clusters: w1 (current, a token) and
// w2 (a CA, a client certificate and key, all files beside it).
const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: w1
  cluster: {server: "https://w1.example:6443", insecure-skip-tls-verify: true}
- name: w2
  cluster: {server: "https://w2.example:6443", certificate-authority: ca.crt}
users:
- name: w1-admin
  user: {token: w1-token}
- name: w2-admin
  user: {client-certificate: certs/tls.crt, client-key: "/ABS/tls.key"}
contexts:
- name: w1
  context: {cluster: w1, user: w1-admin}
- name: w2
  context: {cluster: w2, user: w2-admin, namespace: apps}
current-context: w1
`

// kubeconfigFiles writes twoContexts (with repl applied, old and new in
// turn) and the files it names into a folder, and returns the
// kubeconfig's path.
func kubeconfigFiles(t *testing.T, repl ...string) string {
	t.Helper()
	dir := t.TempDir()
	kc := strings.ReplaceAll(twoContexts, "/ABS", dir)
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(kc, repl[i]) {
			t.Fatalf("fixture has no %q", repl[i])
		}
		kc = strings.Replace(kc, repl[i], repl[i+1], 1)
	}
	testutil.WriteFiles(t, dir, map[string]string{"config": kc, "ca.crt": "CA", "certs/tls.crt": "CERT", "tls.key": "KEY"})
	return filepath.Join(dir, "config")
}

// Kubeconfig registers one context of the file, the current one unless
// another is named, minified to it and with the files it names
// read in as data.
func TestRegistrationKubeconfig(t *testing.T) {
	type view struct {
		Current, Server, Token, Namespace string
		CA, Cert, Key                     string
		Contexts, Clusters, Users         []string
	}
	tests := []struct {
		name    string
		context string
		repl    []string
		want    view
		wantErr string
	}{
		{name: "the current context", want: view{Current: "w1", Server: "https://w1.example:6443", Token: "w1-token",
			Contexts: []string{"w1"}, Clusters: []string{"w1"}, Users: []string{"w1-admin"}}},
		{name: "another context, its files read in", context: "w2", want: view{Current: "w2", Server: "https://w2.example:6443", Namespace: "apps",
			CA: "CA", Cert: "CERT", Key: "KEY", Contexts: []string{"w2"}, Clusters: []string{"w2"}, Users: []string{"w2-admin"}}},
		{name: "an unknown context", context: "w3", wantErr: `has no context "w3" (it has w1, w2)`},
		{name: "no current context", repl: []string{"current-context: w1", ""}, wantErr: "has no current-context: pass --from-context (it has w1, w2)"},
		{name: "a file that is not there", context: "w2", repl: []string{"certificate-authority: ca.crt", "certificate-authority: gone.crt"},
			wantErr: "context w2: embed the files it names: open "},
		{name: "a context naming no user", context: "w2", repl: []string{"user: w2-admin,", "user: nobody,"}, wantErr: "cannot locate user nobody"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Kubeconfig(kubeconfigFiles(t, tt.repl...), tt.context)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Kubeconfig() error = %v, want one that says %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := clientcmd.Load(b)
			if err != nil {
				t.Fatalf("the kubeconfig written does not load: %v\n%s", err, b)
			}
			ctx := cfg.Contexts[cfg.CurrentContext]
			c, u := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
			got := view{Current: cfg.CurrentContext, Server: c.Server, Token: u.Token, Namespace: ctx.Namespace,
				CA: string(c.CertificateAuthorityData), Cert: string(u.ClientCertificateData), Key: string(u.ClientKeyData),
				Contexts: slices.Sorted(maps.Keys(cfg.Contexts)), Clusters: slices.Sorted(maps.Keys(cfg.Clusters)), Users: slices.Sorted(maps.Keys(cfg.AuthInfos))}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("registered kubeconfig (-want +got):\n%s\n%s", diff, b)
			}
			for _, path := range []string{c.CertificateAuthority, u.ClientCertificate, u.ClientKey, u.TokenFile} {
				if path != "" {
					t.Errorf("the kubeconfig written still names file %s", path)
				}
			}
		})
	}
}

const execW1 = "user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, interactiveMode: Never}}"

// NewRegistration refuses what Loom would refuse, with Loom's own message (that of
// cluster.RESTConfig for the Secret it would write), and takes an exec
// plugin with --allow-kubeconfig-exec. A user of a context not registered
// is not looked at: minifying leaves it out.
func TestClusterAddRefusesWhatLoomRefuses(t *testing.T) {
	tests := []struct {
		name      string
		context   string
		repl      []string
		allowExec bool
		wantErr   error // nil: accepted
	}{
		{name: "a token", context: "w1"},
		{name: "an exec plugin", repl: []string{"user: {token: w1-token}", execW1}, wantErr: cluster.ErrExecNotAllowed},
		{name: "an exec plugin, allowed", repl: []string{"user: {token: w1-token}", execW1}, allowExec: true},
		{name: "an auth-provider", repl: []string{"user: {token: w1-token}", "user: {auth-provider: {name: oidc, config: {id-token: T}}}"},
			wantErr: cluster.ErrExecNotAllowed},
		{name: "an exec plugin of a user left out", context: "w2", repl: []string{"user: {token: w1-token}", execW1}},
		{name: "a token file", repl: []string{"user: {token: w1-token}", "user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}"},
			allowExec: true, wantErr: cluster.ErrInvalidKubeconfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := kubeconfigFiles(t, tt.repl...)
			kc, err := Kubeconfig(path, tt.context)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewRegistration("w1", "loom-system", map[string]string{"env": "prod"}, kc, cluster.Options{AllowExec: tt.allowExec})
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("NewRegistration() error = %v", err)
				}
				if got := s.Labels; !maps.Equal(got, map[string]string{"env": "prod", cluster.LabelCluster: "w1"}) {
					t.Errorf("labels = %v", got)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("NewRegistration() error = %v, want one wrapping %v", err, tt.wantErr)
			}
			reg := cluster.Registration{Name: "w1", Kubeconfig: kc, Source: cluster.SourceLoom,
				Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}}
			_, loomErr := cluster.RESTConfig(reg, cluster.Options{AllowExec: tt.allowExec})
			if loomErr == nil || err.Error() != loomErr.Error() {
				t.Errorf("NewRegistration() error = %q, want Loom's: %v", err, loomErr)
			}
		})
	}
}

// Redact leaves no credential of the kubeconfig, and keeps where it
// points.
func TestRedact(t *testing.T) {
	kc, err := Kubeconfig(kubeconfigFiles(t, "user: {token: w1-token}",
		"user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, env: [{name: AWS_SECRET, value: hunter2}], interactiveMode: Never}}"), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, context string
		secrets       []string
		want          []string
	}{
		{name: "exec env", secrets: []string{"hunter2"}, want: []string{"value: REDACTED", "command: aws", "server: https://w1.example:6443"}},
		{name: "client key", context: "w2", secrets: []string{"KEY", "S0VZ", "CA", "Q0E="},
			want: []string{"client-key-data: DATA+OMITTED", "certificate-authority-data: DATA+OMITTED", "server: https://w2.example:6443"}},
		{name: "auth-provider", secrets: []string{"id-T0K3N"}, want: []string{"id-token: REDACTED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := kc
			switch tc.name {
			case "client key":
				if in, err = Kubeconfig(kubeconfigFiles(t), "w2"); err != nil {
					t.Fatal(err)
				}
			case "auth-provider":
				if in, err = Kubeconfig(kubeconfigFiles(t, "user: {token: w1-token}", "user: {auth-provider: {name: oidc, config: {id-token: id-T0K3N}}}"), ""); err != nil {
					t.Fatal(err)
				}
			}
			out, err := Redact(in)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.secrets {
				if strings.Contains(string(out), s) {
					t.Errorf("Redact() leaves %q:\n%s", s, out)
				}
			}
			for _, s := range tc.want {
				if !strings.Contains(string(out), s) {
					t.Errorf("Redact() does not say %q:\n%s", s, out)
				}
			}
		})
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		flags   []string
		want    map[string]string
		wantErr string
	}{
		{want: map[string]string{}},
		{flags: []string{"env=prod", "topology.kubernetes.io/region=eu", "empty="}, want: map[string]string{"env": "prod", "topology.kubernetes.io/region": "eu", "empty": ""}},
		{flags: []string{"env=prod", "env=prod"}, want: map[string]string{"env": "prod"}},
		{flags: []string{"env=prod", "env=dev"}, wantErr: `--label env is given twice, as "prod" and "dev"`},
		{flags: []string{"env"}, wantErr: `--label "env": want KEY=VALUE`},
		{flags: []string{"env=not valid"}, wantErr: `--label "env=not valid": a valid label must be`},
		{flags: []string{"-bad=x"}, wantErr: `--label "-bad=x": name part must consist of`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.flags, " "), func(t *testing.T) {
			got, err := ParseLabels(tt.flags)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseLabels() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseLabels() (-want +got):\n%s", diff)
			}
		})
	}
}
