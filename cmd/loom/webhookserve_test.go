package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/loom-operator/loom/engine/crd"
)

// TestWebhookFlags checks loom run's webhook flags as RunE does.
func TestWebhookFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		url  string
		err  string
		crd  *crd.WebhookConfig // what --install-crds' CRDs point at
	}{
		{name: "defaults: the loopback address", url: "https://127.0.0.1:9443/convert", crd: &crd.WebhookConfig{URL: "https://127.0.0.1:9443/convert"}},
		{name: "off", args: []string{"--webhook-bind-address=0", "--webhook-url=http://x"}},
		{name: "another port", args: []string{"--webhook-bind-address=127.0.0.1:19443"}, url: "https://127.0.0.1:19443/convert"},
		{name: "a Service", args: []string{"--webhook-service=loom-system/loom-webhook"},
			crd: &crd.WebhookConfig{Service: &crd.WebhookService{Namespace: "loom-system", Name: "loom-webhook", Port: 443}}},
		{name: "a Service on another port", args: []string{"--webhook-service=ops/hooks:8443"},
			crd: &crd.WebhookConfig{Service: &crd.WebhookService{Namespace: "ops", Name: "hooks", Port: 8443}}},
		{name: "both", args: []string{"--webhook-service=a/b", "--webhook-url=https://x/convert"}, err: "exclude each other"},
		{name: "short lifetimes for a test", args: []string{"--webhook-cert-lifetime=1m", "--webhook-ca-lifetime=3m", "--webhook-ca-propagation=5s"}, url: "https://127.0.0.1:9443/convert"},
		{name: "serving outlives the CA", args: []string{"--webhook-cert-lifetime=2h", "--webhook-ca-lifetime=1h"}, err: "--webhook-ca-lifetime 1h0m0s: must be at least"},
		{name: "serving shorter than propagation", args: []string{"--webhook-cert-lifetime=1m"}, err: "at least 3 times --webhook-ca-propagation"},
		{name: "no timeout", args: []string{"--webhook-timeout=0s"}, err: "--webhook-timeout 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o webhookServeOptions
			f := pflag.NewFlagSet("run", pflag.ContinueOnError)
			o.addFlags(f)
			if err := f.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := o.check()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("check() = %v, want an error saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.target.URL != tt.url {
				t.Errorf("target URL %q, want %q", o.target.URL, tt.url)
			}
			if tt.crd != nil || strings.Contains(tt.name, "off") {
				if diff := cmp.Diff(tt.crd, crdWebhook(o)); diff != "" {
					t.Errorf("crdWebhook (-want +got):\n%s", diff)
				}
			}
		})
	}
}
