package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/controller/crdinstall"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/webhook"
	"github.com/loom-operator/loom/engine/webhook/certs"
	"github.com/loom-operator/loom/internal/kubeclient"
)

// webhookServeOptions are loom run's flags of the conversion webhook.
type webhookServeOptions struct {
	bind, url, service string
	secret, certDir    string
	// cainjector is --webhook-cainjector-certificate.
	cainjector           string
	caLife, servingLife  time.Duration
	timeout, propagation time.Duration
	// target is what url, service and bind say (check).
	target webhook.Target
}

// addFlags adds the webhook's flags to f.
func (w *webhookServeOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&w.bind, "webhook-bind-address", ":9443", `serve the conversion webhook (HTTPS, /convert) here, on every replica, once a template set declares several versions ("0" turns it off)`)
	f.StringVar(&w.url, "webhook-url", "", "the https URL the API server calls the webhook at, as the CRDs' clientConfig says; the serving certificate names its host (default: https://127.0.0.1:PORT/convert, PORT --webhook-bind-address's, for Loom outside a cluster)")
	f.StringVar(&w.service, "webhook-service", "", "the webhook's Service, as namespace/name[:port] (port 443 when left out), as the CRDs' clientConfig says; the serving certificate names name.namespace.svc")
	f.StringVar(&w.secret, "webhook-cert-secret", certs.DefaultSecret, "the Secret in --loom-namespace that holds the webhook's CA and serving certificate, which Loom creates, rotates and shares between replicas")
	f.StringVar(&w.certDir, "webhook-cert-dir", "", "serve the tls.crt and tls.key of this folder instead (cert-manager's Secret, mounted), read again every minute; Loom then neither rotates nor injects a caBundle")
	f.StringVar(&w.cainjector, "webhook-cainjector-certificate", "", "with --webhook-cert-dir: the cert-manager Certificate (namespace/name) whose CA cert-manager's cainjector writes into the CRDs; Loom annotates its webhook CRDs with cert-manager.io/inject-ca-from")
	f.DurationVar(&w.caLife, "webhook-ca-lifetime", 365*24*time.Hour, "lifetime of the webhook's CA; a new CA joins the caBundle at 2/3 of it")
	f.DurationVar(&w.servingLife, "webhook-cert-lifetime", 90*24*time.Hour, "lifetime of the webhook's serving certificate; it is reissued at 2/3 of it")
	f.DurationVar(&w.propagation, "webhook-ca-propagation", time.Minute, "how long a new CA is in every CRD's caBundle before a serving certificate it signed is served")
	f.DurationVar(&w.timeout, "webhook-timeout", webhook.DefaultTimeout, "deadline of one ConversionReview (the API server's own is 30s by default)")
}

// check validates the flags.
func (w *webhookServeOptions) check() error {
	if w.bind == "0" {
		return nil
	}
	t, err := webhook.ParseTarget(w.url, w.service, w.bind)
	if err != nil {
		return err
	}
	w.target = t
	switch {
	case w.servingLife < 3*w.propagation:
		return fmt.Errorf("--webhook-cert-lifetime %s: must be at least 3 times --webhook-ca-propagation (%s)", w.servingLife, w.propagation)
	case w.caLife < w.servingLife:
		return fmt.Errorf("--webhook-ca-lifetime %s: must be at least --webhook-cert-lifetime (%s)", w.caLife, w.servingLife)
	case w.cainjector != "" && w.certDir == "":
		return fmt.Errorf("--webhook-cainjector-certificate needs --webhook-cert-dir (cert-manager's certificate)")
	case w.timeout <= 0:
		return fmt.Errorf("--webhook-timeout %s: must be positive", w.timeout)
	}
	return nil
}

// identity says how the webhook is served, for the permissions the sets
// need (controller.Options.Webhook).
func (w *webhookServeOptions) identity() identity.Webhook {
	return identity.Webhook{CertSecret: w.secret, Files: w.certDir != "", Off: w.bind == "0"}
}

// crdWebhook is where the CRDs --install-crds applies send conversions:
// the webhook's target, with no caBundle (the rotator injects it, or
// cert-manager's cainjector), or nil when the webhook is off (the CRDs
// then keep engine/crd's default Service).
func crdWebhook(o webhookServeOptions) *crd.WebhookConfig {
	if o.bind == "0" {
		return nil
	}
	if o.target.URL != "" {
		return &crd.WebhookConfig{URL: o.target.URL}
	}
	return &crd.WebhookConfig{Service: &crd.WebhookService{Namespace: o.target.ServiceNamespace, Name: o.target.ServiceName, Port: o.target.ServicePort}}
}

// certSource is where the served certificate comes from: Loom's own
// (certs.Rotator) or another's (certs.Files).
type certSource interface {
	Certificate() *tls.Certificate
	Serving() bool
	Run(ctx context.Context) error
}

// webhookHandle is what the rest of loom run needs of the webhook: where
// the CRDs' clientConfig points, and the caBundle they should carry (for
// --install-crds, whose generated CRDs take both), and a way to have the
// caBundle injected at once into a CRD just installed.
type webhookHandle struct {
	// Target is --webhook-url or --webhook-service (or the loopback URL).
	Target webhook.Target
	// CABundle is the caBundle now: Loom's CAs (nil until the Secret is
	// read, and with --webhook-cert-dir, where cert-manager injects).
	CABundle func() []byte
	// CRDInstalled asks for an injection pass now.
	CRDInstalled func()
	// Ready says why this replica cannot serve conversions it should
	// (a set of several versions is loaded), or nil: for /readyz.
	Ready func() error
}

// startWebhook serves the conversion webhook on every replica, whatever
// leader election or sharding say: the API server may call any of them.
// The template sets of several versions are loaded apart from the Manager
// (webhook.Sets). The server, and the certificates' rotation, start once
// one is loaded: at once when one is there at start, and an error to
// listen is then returned; later, it is logged.
func startWebhook(ctx context.Context, o webhookServeOptions, cfg *rest.Config, loomNS, templates string, reg prometheus.Registerer) (*webhookHandle, error) {
	h := &webhookHandle{Target: o.target, CABundle: func() []byte { return nil }, CRDInstalled: func() {}, Ready: func() error { return nil }}
	if o.bind == "0" {
		return h, nil
	}
	logger := klog.FromContext(ctx)
	metrics := webhook.NewMetrics(reg)
	registry := webhook.NewRegistry()
	metrics.SetKinds(func() int { return len(registry.Kinds()) })
	var source certSource
	var rot *certs.Rotator
	var annotate func()
	if o.certDir != "" && o.cainjector != "" {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("create dynamic client: %w", err)
		}
		in := &certs.Injector{CRDs: dyn.Resource(crdinstall.CRDs), FieldManager: apply.FieldManager}
		annotate = func() {
			if err := in.Annotate(ctx, o.cainjector); err != nil {
				logger.Error(err, "CRDs not annotated for cert-manager's cainjector")
			}
		}
	}
	if o.certDir != "" {
		f := &certs.Files{Dir: o.certDir, Resync: time.Minute}
		if err := f.Load(); err != nil {
			return nil, err
		}
		source = f
	} else {
		kube, err := kubeclient.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("create clientset: %w", err)
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("create dynamic client: %w", err)
		}
		rot = certs.NewRotator(certs.Options{
			Secrets: kube.CoreV1().Secrets(loomNS), Secret: o.secret,
			Lifetimes: certs.Lifetimes{CA: o.caLife, Serving: o.servingLife, Propagation: o.propagation},
			Hosts:     certs.Hosts{DNS: o.target.DNS, IPs: o.target.IPs},
			Injector:  &certs.Injector{CRDs: dyn.Resource(crdinstall.CRDs), FieldManager: apply.FieldManager, Expect: registry.Kinds},
		})
		source = rot
		h.CABundle, h.CRDInstalled = rot.CABundle, rot.Trigger
	}
	var listening bool
	var mu sync.Mutex
	metrics.SetServing(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return listening && source.Serving()
	})
	h.Ready = func() error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case len(registry.Kinds()) == 0:
			return nil
		case !listening:
			return fmt.Errorf("the conversion webhook of %v does not listen on %s", registry.Kinds(), o.bind)
		case !source.Serving():
			return fmt.Errorf("the conversion webhook of %v has no valid serving certificate yet", registry.Kinds())
		}
		return nil
	}
	listen := func() error {
		mu.Lock()
		defer mu.Unlock()
		if listening {
			return nil
		}
		srv, err := webhook.Listen(o.bind, webhook.Handler(webhook.Options{Registry: registry, Timeout: o.timeout, Metrics: metrics}), source.Certificate)
		if err != nil {
			return err
		}
		listening = true
		go func() {
			if err := srv.Serve(ctx, o.timeout); err != nil {
				logger.Error(err, "Conversion webhook stopped")
			}
		}()
		go func() { _ = source.Run(ctx) }()
		logger.Info("Serving the conversion webhook", "address", srv.Addr().String(), "url", o.target.URL,
			"service", o.target.ServiceNamespace+"/"+o.target.ServiceName, "kinds", fmt.Sprint(registry.Kinds()))
		return nil
	}
	sets := &webhook.Sets{Root: templates, Registry: registry, Of: webhook.SetConverter}
	if err := sets.Load(); err != nil {
		logger.Error(err, "Some template sets' converters were not loaded")
	}
	if len(registry.Kinds()) > 0 {
		if err := listen(); err != nil {
			return nil, err
		}
	}
	sets.Changed = func() {
		if len(registry.Kinds()) == 0 {
			return
		}
		if err := listen(); err != nil {
			logger.Error(err, "Conversion webhook not served")
		}
		if rot != nil {
			rot.Trigger()
		}
		if annotate != nil {
			go annotate()
		}
	}
	if annotate != nil {
		// A CRD Loom installs later is annotated within a minute.
		go wait.UntilWithContext(ctx, func(context.Context) {
			if len(registry.Kinds()) > 0 {
				annotate()
			}
		}, time.Minute)
	}
	go func() {
		if err := sets.Watch(ctx, 250*time.Millisecond); err != nil {
			logger.Error(err, "Template watcher of the conversion webhook stopped; edits need a restart")
		}
	}()
	return h, nil
}
