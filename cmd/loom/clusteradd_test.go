package main

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
	writeFiles(t, dir, map[string]string{"config": kc, "ca.crt": "CA", "certs/tls.crt": "CERT", "tls.key": "KEY"})
	return filepath.Join(dir, "config")
}

// Add registers one context of the file, the current one unless
// --from-context says another, minified to it and with the files it names
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
			b, err := registrationKubeconfig(kubeconfigFiles(t, tt.repl...), tt.context)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("registrationKubeconfig() error = %v, want one that says %q", err, tt.wantErr)
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

// Add refuses what Loom would refuse, with Loom's own message (that of
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
			o := &clusterAddOptions{clusterOptions: &clusterOptions{namespace: "loom-system"}, fromPath: path, fromContext: tt.context,
				allowExec: tt.allowExec, labels: []string{"env=prod"}}
			s, err := o.registrationSecret("w1")
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("registrationSecret() error = %v", err)
				}
				if got := s.Labels; !maps.Equal(got, map[string]string{"env": "prod", cluster.LabelCluster: "w1"}) {
					t.Errorf("labels = %v", got)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("registrationSecret() error = %v, want one wrapping %v", err, tt.wantErr)
			}
			kc, kerr := registrationKubeconfig(path, tt.context)
			if kerr != nil {
				t.Fatal(kerr)
			}
			reg := cluster.Registration{Name: "w1", Kubeconfig: kc, Source: cluster.SourceLoom,
				Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}}
			_, loomErr := cluster.RESTConfig(reg, cluster.Options{AllowExec: tt.allowExec})
			if loomErr == nil || err.Error() != loomErr.Error() {
				t.Errorf("registrationSecret() error = %q, want Loom's: %v", err, loomErr)
			}
		})
	}
}

// A dry run prints the Secret with its credentials redacted, and sends no
// request: the management cluster's kubeconfig is not even read.
func TestClusterAddDryRun(t *testing.T) {
	repl := []string{"user: {token: w1-token}",
		"user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, env: [{name: AWS_SECRET, value: hunter2}], interactiveMode: Never}}"}
	for _, tc := range []struct{ name, context, redacted string }{
		{"exec env", "", "value: REDACTED"},
		{"client key", "w2", "client-key-data: DATA+OMITTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := kubeconfigFiles(t, repl...)
			args := []string{"cluster", "add", "w1", "--from-kubeconfig", path, "--allow-kubeconfig-exec", "--dry-run",
				"--kubeconfig", filepath.Join(t.TempDir(), "absent"), "-n", "loom", "--label", "env=prod"}
			if tc.context != "" {
				args = append(args, "--from-context", tc.context)
			}
			out, stderr, err := executeSplit(t, "", args...)
			if err != nil {
				t.Fatalf("dry run: %v\n%s", err, stderr)
			}
			for _, secret := range []string{"hunter2", "w1-token", "KEY", "S0VZ" /* base64 KEY */} {
				if strings.Contains(out, secret) {
					t.Errorf("the dry run shows the credential %q:\n%s", secret, out)
				}
			}
			for _, want := range []string{"name: w1\n", "namespace: loom\n", "loom.dev/cluster: w1", "env: prod", tc.redacted, "server: https://w"} {
				if !strings.Contains(out, want) {
					t.Errorf("the dry run does not show %q:\n%s", want, out)
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
			got, err := parseLabels(tt.flags)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseLabels() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseLabels() (-want +got):\n%s", diff)
			}
		})
	}
}

// Add needs the file to register: --kubeconfig names the management
// cluster, as in every other command, so it is not taken for it.
func TestClusterAddNeedsFromKubeconfig(t *testing.T) {
	_, _, err := executeSplit(t, "", "cluster", "add", "w1", "--kubeconfig", "w1.kubeconfig")
	if err == nil || !strings.Contains(err.Error(), `required flag(s) "from-kubeconfig" not set`) {
		t.Errorf("error = %v, want the missing --from-kubeconfig", err)
	}
}
