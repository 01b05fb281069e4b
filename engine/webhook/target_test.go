package webhook

import (
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		name, url, service, bind string
		want                     Target
		err                      string
	}{
		{name: "loopback by default", bind: ":9443",
			want: Target{URL: "https://127.0.0.1:9443/convert", IPs: []net.IP{net.ParseIP("127.0.0.1")}}},
		{name: "a URL", url: "https://loom.example.com:8443/convert", bind: ":9443",
			want: Target{URL: "https://loom.example.com:8443/convert", DNS: []string{"loom.example.com"}}},
		{name: "a Service", service: "loom-system/loom-webhook", bind: ":9443",
			want: Target{ServiceNamespace: "loom-system", ServiceName: "loom-webhook", ServicePort: 443,
				DNS: []string{"loom-webhook.loom-system.svc", "loom-webhook.loom-system.svc.cluster.local"}}},
		{name: "a Service and port", service: "ns/hook:9443",
			want: Target{ServiceNamespace: "ns", ServiceName: "hook", ServicePort: 9443, DNS: []string{"hook.ns.svc", "hook.ns.svc.cluster.local"}}},
		{name: "both", url: "https://a/convert", service: "ns/hook", err: "exclude each other"},
		{name: "http", url: "http://127.0.0.1:9443/convert", err: "want an https URL"},
		{name: "bad Service", service: "hook:443", err: "want namespace/name[:port]"},
		{name: "bad port", service: "ns/hook:http", err: "want namespace/name[:port]"},
		{name: "no port to default to", bind: ":0", err: "give a port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTarget(tt.url, tt.service, tt.bind)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
