package crd

import (
	"context"
	"errors"
	"fmt"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/loom-operator/loom/engine/config"
)

// WebhookPath is the path of Loom's conversion webhook on its server.
const WebhookPath = "/convert"

// DefaultWebhook is the clientConfig of a CRD whose versions need Loom's
// conversion webhook when none is given (Generate, loom crd without
// --webhook-url or --webhook-service): the Service loom-webhook in the
// namespace loom-system, port 443, path /convert.
var DefaultWebhook = WebhookConfig{Service: &WebhookService{Namespace: "loom-system", Name: "loom-webhook"}}

// Options change what Generate builds.
type Options struct {
	// Webhook is where the API server sends a ConversionReview, for a set
	// of several versions; nil means DefaultWebhook.
	Webhook *WebhookConfig
}

// WebhookConfig is where the API server reaches Loom's conversion
// webhook: a URL or a Service, and the CA bundle that signs its serving
// certificate.
type WebhookConfig struct {
	// URL is an https URL, e.g. https://127.0.0.1:9443/convert (Loom out
	// of a cluster).
	URL string
	// Service is a Service in the cluster.
	Service *WebhookService
	// CABundle is the PEM of the CAs the API server trusts for the
	// webhook; empty leaves the caBundle out of the CRD (the system's
	// roots, or another field manager's caBundle, are used).
	CABundle []byte
}

// WebhookService is a Service that fronts Loom's webhook.
type WebhookService struct {
	Namespace, Name string
	// Port is the Service's port; 0 means 443.
	Port int32
	// Path is the URL path; empty means WebhookPath.
	Path string
}

// clientConfig is w as the CRD's webhook clientConfig.
func (w WebhookConfig) clientConfig() (*apiextv1.WebhookClientConfig, error) {
	cc := &apiextv1.WebhookClientConfig{CABundle: w.CABundle}
	switch {
	case w.URL != "" && w.Service != nil:
		return nil, errors.New("conversion webhook: give either a URL or a Service, not both")
	case w.URL != "":
		cc.URL = &w.URL
	case w.Service != nil:
		s := *w.Service
		if s.Port == 0 {
			s.Port = 443
		}
		if s.Path == "" {
			s.Path = WebhookPath
		}
		cc.Service = &apiextv1.ServiceReference{Namespace: s.Namespace, Name: s.Name, Port: &s.Port, Path: &s.Path}
	default:
		return nil, errors.New("conversion webhook: give a URL or a Service")
	}
	return cc, nil
}

// GenerateWith is Generate with opts: for a set of several versions, the
// conversion webhook's clientConfig.
func GenerateWith(c config.Config, opts Options) (*apiextv1.CustomResourceDefinition, error) {
	def, err := generate(c)
	if err != nil {
		return nil, err
	}
	if opts.Webhook != nil {
		if err := SetWebhook(def, *opts.Webhook); err != nil {
			return nil, err
		}
	}
	if err := Validate(context.Background(), def); err != nil {
		return nil, err
	}
	return def, nil
}

// SetWebhook points def's conversion webhook at w. A CRD that converts
// without a webhook (one version, or strategy None) is left as it is.
func SetWebhook(def *apiextv1.CustomResourceDefinition, w WebhookConfig) error {
	conv := def.Spec.Conversion
	if conv == nil || conv.Strategy != apiextv1.WebhookConverter {
		return nil
	}
	cc, err := w.clientConfig()
	if err != nil {
		return fmt.Errorf("CRD %s: %w", def.Name, err)
	}
	conv.Webhook.ClientConfig = cc
	return nil
}

// versions builds the CRD's versions, one per version the set serves,
// and its conversion: nil for one version; None when every version has
// the hub's schema and no conversion rules (the API server only changes
// apiVersion); else Loom's webhook at DefaultWebhook.
func versions(c config.Config, hub *apiextv1.JSONSchemaProps) ([]apiextv1.CustomResourceDefinitionVersion, *apiextv1.CustomResourceConversion, error) {
	names := c.VersionNames()
	storage := c.StorageVersionOrHub()
	out := make([]apiextv1.CustomResourceDefinitionVersion, 0, len(names))
	same := true
	for _, name := range names {
		schema := hub
		v, _ := c.Version(name)
		if name != c.HubVersion() {
			var err error
			if schema, err = VersionSchema(c, name); err != nil {
				return nil, nil, err
			}
			same = same && equality.Semantic.DeepEqual(schema, hub) && noConversion(v.Conversion)
		}
		cols, err := printerColumns(c.Parent.PrinterColumns, schema)
		if err != nil {
			if len(names) > 1 {
				err = inVersion(err, name)
			}
			return nil, nil, err
		}
		cv := apiextv1.CustomResourceDefinitionVersion{
			Name:                     name,
			Served:                   true,
			Storage:                  name == storage,
			Deprecated:               v.Deprecated,
			Schema:                   &apiextv1.CustomResourceValidation{OpenAPIV3Schema: schema},
			Subresources:             subresources(c),
			AdditionalPrinterColumns: cols,
		}
		if v.DeprecationWarning != "" {
			cv.DeprecationWarning = ptr(v.DeprecationWarning)
		}
		out = append(out, cv)
	}
	switch {
	case len(out) == 1:
		return out, nil, nil
	case same:
		return out, &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}, nil
	}
	cc, err := DefaultWebhook.clientConfig()
	if err != nil {
		return nil, nil, err
	}
	return out, &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter, Webhook: &apiextv1.WebhookConversion{
		ClientConfig: cc, ConversionReviewVersions: []string{"v1"},
	}}, nil
}

// noConversion reports whether a version has no conversion rules.
func noConversion(cv config.Conversion) bool {
	return len(cv.Moves) == 0 && cv.ToHub == "" && cv.FromHub == ""
}

// columnError is a printer column's error, which inVersion places in a
// version.
type columnError struct {
	prefix string // parent.printerColumns[i] (Name)
	err    error
}

func (e *columnError) Error() string { return e.prefix + ": " + e.err.Error() }
func (e *columnError) Unwrap() error { return e.err }

// inVersion says which version a printer column's error is in.
func inVersion(err error, version string) error {
	var ce *columnError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s: version %s: %w", ce.prefix, version, ce.err)
	}
	return fmt.Errorf("version %s: %w", version, err)
}
