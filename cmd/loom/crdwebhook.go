package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/loom-operator/loom/engine/crd"
)

// webhookFlags are where a CRD of several versions sends its conversions:
// loom crd's --webhook-url, --webhook-service and --ca-bundle-file.
type webhookFlags struct {
	url, service, caFile string
}

// register adds the flags to f.
func (w *webhookFlags) register(f *pflag.FlagSet) {
	f.StringVar(&w.url, "webhook-url", "", "for a set of several versions: the https URL of Loom's conversion webhook, e.g. https://127.0.0.1:9443/convert (default: the Service loom-system/loom-webhook:443, path /convert)")
	f.StringVar(&w.service, "webhook-service", "", "for a set of several versions: the Service of Loom's conversion webhook, as namespace/name[:port] (port 443 when left out; path /convert)")
	f.StringVar(&w.caFile, "ca-bundle-file", "", "for a set of several versions: a PEM file of the CAs that sign the webhook's serving certificate (the CRD's caBundle)")
}

// config is the webhook the flags name, or nil when none is given.
func (w *webhookFlags) config() (*crd.WebhookConfig, error) {
	if w.url == "" && w.service == "" && w.caFile == "" {
		return nil, nil
	}
	if w.url != "" && w.service != "" {
		return nil, errors.New("--webhook-url and --webhook-service exclude each other")
	}
	cfg := crd.DefaultWebhook
	switch {
	case w.url != "":
		cfg = crd.WebhookConfig{URL: w.url}
	case w.service != "":
		svc, err := parseWebhookService(w.service)
		if err != nil {
			return nil, err
		}
		cfg = crd.WebhookConfig{Service: svc}
	}
	if w.caFile != "" {
		pem, err := os.ReadFile(w.caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-bundle-file: %w", err)
		}
		cfg.CABundle = pem
	}
	return &cfg, nil
}

// parseWebhookService parses namespace/name[:port].
func parseWebhookService(s string) (*crd.WebhookService, error) {
	bad := fmt.Errorf("--webhook-service %q: want namespace/name[:port]", s)
	ns, rest, ok := strings.Cut(s, "/")
	if !ok || ns == "" || rest == "" {
		return nil, bad
	}
	svc := &crd.WebhookService{Namespace: ns, Name: rest}
	if name, port, ok := strings.Cut(rest, ":"); ok {
		p, err := strconv.ParseInt(port, 10, 32)
		if err != nil || p < 1 || p > 65535 || name == "" {
			return nil, bad
		}
		svc.Name, svc.Port = name, int32(p)
	}
	return svc, nil
}
