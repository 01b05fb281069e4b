//go:build e2e

package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/loom-operator/loom/test/env"
)

// apiCounter is a proxy in front of the API server that counts the
// requests one process sends it, by verb and resource as the API server's
// apiserver_request_total names them: what reached the API server from
// that process alone, where the server's own counter adds up every client
// of a shared cluster.
type apiCounter struct {
	// kubeconfig points at the proxy, with no credentials: the proxy
	// sends the requests on with the tests' own.
	kubeconfig string

	mu sync.Mutex
	n  requestCounts
}

// newAPICounter starts a counting proxy to e's API server, and writes its
// kubeconfig as <name>.kubeconfig in dir.
func newAPICounter(t *testing.T, e *env.Env, dir, name string) *apiCounter {
	t.Helper()
	return newAPICounterTo(t, e.Config, dir, name)
}

// newAPICounterTo starts a counting proxy to the API server cfg reaches
// (that of the local cluster, or of the workload cluster), and writes its
// kubeconfig as <name>.kubeconfig in dir.
func newAPICounterTo(t *testing.T, cfg *rest.Config, dir, name string) *apiCounter {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &apiCounter{n: requestCounts{}, kubeconfig: filepath.Join(dir, name+".kubeconfig")}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1, // watches stream
		// A request the process gave up (a watch it stopped) is no error
		// of the test's.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.count(r)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	if err := clientcmd.WriteToFile(*kc, c.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return c
}

// count records one request.
func (c *apiCounter) count(r *http.Request) {
	resource, sub, named := requestResource(r.URL.Path)
	if resource == "" {
		return // discovery, /version, /openapi
	}
	verb := r.Method
	switch {
	case r.Method == http.MethodGet && (r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"):
		verb = "WATCH"
	case r.Method == http.MethodGet && !named:
		verb = "LIST"
	case r.Method == http.MethodPatch && strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch"):
		verb = "APPLY"
	case r.Method == http.MethodDelete && !named:
		verb = "DELETECOLLECTION"
	}
	c.mu.Lock()
	c.n[requestKey{verb, resource, sub}]++
	c.mu.Unlock()
}

// counts returns the counts so far.
func (c *apiCounter) counts() requestCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(requestCounts, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// requestResource reads the resource, the subresource, and whether one
// object is named, from an API path: /api/v1/namespaces/ns/configmaps/x,
// /apis/apps/v1/deployments, /api/v1/namespaces/ns (resource namespaces).
func requestResource(path string) (resource, subresource string, named bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) > 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) > 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "", "", false
	}
	if len(parts) > 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) > 2 {
		subresource = parts[2]
	}
	return parts[0], subresource, len(parts) > 1
}

func TestRequestResource(t *testing.T) {
	for path, want := range map[string]struct {
		resource, sub string
		named         bool
	}{
		"/api/v1/namespaces/ns/configmaps":                   {"configmaps", "", false},
		"/api/v1/namespaces/ns/configmaps/x":                 {"configmaps", "", true},
		"/apis/apps/v1/namespaces/ns/deployments/web/status": {"deployments", "status", true},
		"/apis/apps/v1/deployments":                          {"deployments", "", false},
		"/api/v1/namespaces/ns":                              {"namespaces", "", true},
		"/api/v1/namespaces":                                 {"namespaces", "", false},
		"/apis/apps/v1":                                      {"", "", false},
		"/version":                                           {"", "", false},
	} {
		r, s, n := requestResource(path)
		if r != want.resource || s != want.sub || n != want.named {
			t.Errorf("requestResource(%q) = %q, %q, %v; want %q, %q, %v", path, r, s, n, want.resource, want.sub, want.named)
		}
	}
}
