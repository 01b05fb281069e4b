package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FlagAllowExec is the name of loom run's flag that sets
// Options.AllowExec, named in the error that refuses a kubeconfig that runs
// a command (Flux's is --insecure-kubeconfig-exec).
const FlagAllowExec = "allow-kubeconfig-exec"

// Options says what RESTConfig may accept.
type Options struct {
	// AllowExec lets a kubeconfig's user run an exec credential plugin or
	// use a (legacy) auth-provider. Either runs code in Loom's process or
	// container on the say of whoever wrote the Secret, so it is off unless
	// Loom is started with --allow-kubeconfig-exec (FlagAllowExec).
	AllowExec bool
}

// ErrInvalidKubeconfig is wrapped by RESTConfig's errors for a kubeconfig
// that cannot be used: empty, not a kubeconfig, without a usable
// current-context, or naming files on Loom's disk. Retrying does not help;
// fixing the Secret does.
var ErrInvalidKubeconfig = errors.New("invalid kubeconfig")

// ErrExecNotAllowed is wrapped by RESTConfig's error for a kubeconfig
// whose user runs an exec credential plugin or an auth-provider while
// Options.AllowExec is off.
var ErrExecNotAllowed = errors.New("kubeconfig runs a credential plugin, which is not allowed")

// RESTConfig builds the client configuration of a registered cluster from
// its kubeconfig's current-context, with client-go's clientcmd. It refuses,
// naming the cluster and its Secret:
//   - an empty kubeconfig, one clientcmd cannot load, one without a
//     current-context, or whose current-context names a context, cluster
//     or user it does not define (ErrInvalidKubeconfig);
//   - a user, in use or not, that runs an exec credential plugin or an
//     auth-provider, unless opts.AllowExec (ErrExecNotAllowed);
//   - a path to a file (a token file, a client certificate or key, a
//     certificate authority), always: the file would be read from Loom's
//     disk, which could send Loom's own service-account token to the
//     registered server; a registration carries its credentials as data
//     (ErrInvalidKubeconfig).
//
// It reads no file and contacts no server.
func RESTConfig(reg Registration, opts Options) (*rest.Config, error) {
	cfg, err := load(reg.Kubeconfig)
	if err == nil {
		err = checkFiles(cfg)
	}
	if err == nil && !opts.AllowExec {
		err = checkExec(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster %s (Secret %s): %w", reg.Name, reg.Secret, err)
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, cfg.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster %s (Secret %s): %w: %w", reg.Name, reg.Secret, ErrInvalidKubeconfig, err)
	}
	return rc, nil
}

// load parses a kubeconfig and checks that its current-context names a
// context whose cluster and user it defines.
func load(kubeconfig []byte) (*clientcmdapi.Config, error) {
	if len(kubeconfig) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrInvalidKubeconfig)
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKubeconfig, err)
	}
	if cfg.CurrentContext == "" {
		return nil, fmt.Errorf("%w: no current-context", ErrInvalidKubeconfig)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("%w: current-context %q is not among its contexts", ErrInvalidKubeconfig, cfg.CurrentContext)
	}
	if _, ok := cfg.Clusters[ctx.Cluster]; !ok {
		return nil, fmt.Errorf("%w: context %q names cluster %q, which it does not define", ErrInvalidKubeconfig, cfg.CurrentContext, ctx.Cluster)
	}
	if _, ok := cfg.AuthInfos[ctx.AuthInfo]; !ok {
		return nil, fmt.Errorf("%w: context %q names user %q, which it does not define", ErrInvalidKubeconfig, cfg.CurrentContext, ctx.AuthInfo)
	}
	return cfg, nil
}

// checkExec refuses a user that runs an exec credential plugin or an
// auth-provider, naming the first such user in name order.
func checkExec(cfg *clientcmdapi.Config) error {
	for _, name := range sortedKeys(cfg.AuthInfos) {
		u := cfg.AuthInfos[name]
		what := ""
		switch {
		case u.Exec != nil:
			what = fmt.Sprintf("exec credential plugin %q", u.Exec.Command)
		case u.AuthProvider != nil:
			what = fmt.Sprintf("auth-provider %q", u.AuthProvider.Name)
		default:
			continue
		}
		return fmt.Errorf("%w: user %q runs %s; start Loom with --%s to allow it", ErrExecNotAllowed, name, what, FlagAllowExec)
	}
	return nil
}

// checkFiles refuses a user or cluster that names a file, naming the first
// in name order.
func checkFiles(cfg *clientcmdapi.Config) error {
	for _, name := range sortedKeys(cfg.AuthInfos) {
		u := cfg.AuthInfos[name]
		for _, f := range [...]struct{ field, path string }{
			{"tokenFile", u.TokenFile}, {"client-certificate", u.ClientCertificate}, {"client-key", u.ClientKey},
		} {
			if f.path != "" {
				return fmt.Errorf("%w: user %q names a file (%s %q); put the credentials in the kubeconfig as data", ErrInvalidKubeconfig, name, f.field, f.path)
			}
		}
	}
	for _, name := range sortedKeys(cfg.Clusters) {
		if path := cfg.Clusters[name].CertificateAuthority; path != "" {
			return fmt.Errorf("%w: cluster %q names a file (certificate-authority %q); use certificate-authority-data", ErrInvalidKubeconfig, name, path)
		}
	}
	return nil
}

// sortedKeys returns m's keys in order, so that errors are stable.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
