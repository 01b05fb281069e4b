package webhook

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Target is where the API server reaches the webhook, as the CRD's
// clientConfig says: a URL (outside a cluster, Loom's loopback address) or
// a Service (in a cluster). Its hosts are the names the serving
// certificate must carry.
type Target struct {
	// URL is the webhook's https URL, or "".
	URL string
	// Service is namespace, name and port of the webhook's Service, when
	// URL is "".
	ServiceNamespace, ServiceName string
	ServicePort                   int32
	// DNS and IPs are the serving certificate's names.
	DNS []string
	IPs []net.IP
}

// ParseTarget reads loom run's --webhook-url and --webhook-service
// (namespace/name[:port], port 443 when left out). With neither, the
// target is https://127.0.0.1:PORT/convert, PORT being bind's (the
// --webhook-bind-address): Loom run outside a cluster, whose API server
// reaches it on the loopback address.
func ParseTarget(rawURL, service, bind string) (Target, error) {
	switch {
	case rawURL != "" && service != "":
		return Target{}, fmt.Errorf("--webhook-url and --webhook-service exclude each other")
	case service != "":
		ns, rest, ok := strings.Cut(service, "/")
		name, port := rest, "443"
		if n, p, ok := strings.Cut(rest, ":"); ok {
			name, port = n, p
		}
		p, err := strconv.ParseInt(port, 10, 32)
		if !ok || ns == "" || name == "" || err != nil || p < 1 || p > 65535 {
			return Target{}, fmt.Errorf("--webhook-service %q: want namespace/name[:port]", service)
		}
		return Target{ServiceNamespace: ns, ServiceName: name, ServicePort: int32(p),
			DNS: []string{name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local"}}, nil
	case rawURL == "":
		_, port, err := net.SplitHostPort(bind)
		if err != nil || port == "" || port == "0" {
			return Target{}, fmt.Errorf("--webhook-bind-address %q: give a port, or --webhook-url", bind)
		}
		rawURL = "https://" + net.JoinHostPort("127.0.0.1", port) + Path
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return Target{}, fmt.Errorf("--webhook-url %q: want an https URL, such as https://127.0.0.1:9443%s", rawURL, Path)
	}
	t := Target{URL: rawURL}
	if ip := net.ParseIP(u.Hostname()); ip != nil {
		t.IPs = []net.IP{ip}
	} else {
		t.DNS = []string{u.Hostname()}
	}
	return t, nil
}
