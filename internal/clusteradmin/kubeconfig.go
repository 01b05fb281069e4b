package clusteradmin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig reads the kubeconfig file path and returns the kubeconfig a
// registration holds: only the context context (default: the file's
// current-context, which it becomes) with its cluster and user
// (minified), the certificate and key files they name read into the
// kubeconfig as data, relative paths from the file's folder (flattened),
// as `kubectl config view --minify --flatten` writes it. A token file is
// left as it is, for cluster.RESTConfig to refuse: the token a file holds
// is often one that rotates (a projected service-account token), which a
// copy would outlive.
func Kubeconfig(path, context string) ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig %s: %w", path, err)
	}
	if context != "" {
		cfg.CurrentContext = context
	}
	if cfg.CurrentContext == "" {
		return nil, fmt.Errorf("kubeconfig %s has no current-context: pass --from-context (it has %s)", path, contextNames(cfg))
	}
	if _, ok := cfg.Contexts[cfg.CurrentContext]; !ok {
		return nil, fmt.Errorf("kubeconfig %s has no context %q (it has %s)", path, cfg.CurrentContext, contextNames(cfg))
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig %s, context %s: %w", path, cfg.CurrentContext, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig %s, context %s: embed the files it names: %w", path, cfg.CurrentContext, err)
	}
	cfg.Preferences = clientcmdapi.Preferences{}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return b, nil
}

// contextNames lists a kubeconfig's contexts for an error, in order.
func contextNames(cfg *clientcmdapi.Config) string {
	if len(cfg.Contexts) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(cfg.Contexts)), ", ")
}

// Redact returns kubeconfig with its credentials replaced, as `kubectl
// config view` shows one: tokens, passwords and private keys are REDACTED,
// certificate data DATA+OMITTED, and so are the values of an
// auth-provider's config and an exec plugin's environment, which may hold
// tokens too. The server, the context and the user's name stay, which is
// what a dry run is read for.
func Redact(kubeconfig []byte) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	// RedactSecrets writes "REDACTED" bytes into key data, which
	// ShortenConfig then shows as DATA+OMITTED rather than their base64.
	if err := clientcmdapi.RedactSecrets(cfg); err != nil {
		return nil, err
	}
	clientcmdapi.ShortenConfig(cfg)
	for _, u := range cfg.AuthInfos {
		if u.AuthProvider != nil {
			for k := range u.AuthProvider.Config {
				u.AuthProvider.Config[k] = "REDACTED"
			}
		}
		if u.Exec != nil {
			for i := range u.Exec.Env {
				u.Exec.Env[i].Value = "REDACTED"
			}
		}
	}
	return clientcmd.Write(*cfg)
}

// ParseLabels reads loom cluster add's --label KEY=VALUE flags, each
// checked as the API server checks a label.
func ParseLabels(flags []string) (map[string]string, error) {
	labels := map[string]string{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--label %q: want KEY=VALUE", f)
		}
		errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...)
		if len(errs) > 0 {
			return nil, fmt.Errorf("--label %q: %s", f, strings.Join(errs, "; "))
		}
		if old, dup := labels[k]; dup && old != v {
			return nil, fmt.Errorf("--label %s is given twice, as %q and %q", k, old, v)
		}
		labels[k] = v
	}
	return labels, nil
}
