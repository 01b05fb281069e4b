package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Files serves a certificate that another keeps: tls.crt and tls.key in
// Dir, such as cert-manager's Secret mounted as a volume. It reads them
// again every Resync, so that a renewal is served without a restart, and
// neither rotates nor injects a caBundle (cert-manager's cainjector does).
type Files struct {
	Dir    string
	Resync time.Duration
	cert   atomic.Pointer[tls.Certificate]
}

// Load reads the certificate and key once.
func (f *Files) Load() error {
	pair, err := tls.LoadX509KeyPair(filepath.Join(f.Dir, corev1.TLSCertKey), filepath.Join(f.Dir, corev1.TLSPrivateKeyKey))
	if err != nil {
		return fmt.Errorf("read the webhook certificate in %s: %w", f.Dir, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Errorf("read the webhook certificate in %s: %w", f.Dir, err)
		}
	}
	f.cert.Store(&pair)
	return nil
}

// Run reads the files every Resync until ctx is done; a failed read keeps
// the certificate read before, and is logged.
func (f *Files) Run(ctx context.Context) error {
	t := time.NewTicker(max(f.Resync, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := f.Load(); err != nil {
				klog.FromContext(ctx).Error(err, "Webhook certificate not read again; serving the last one read")
			}
		}
	}
}

// Certificate is the certificate read last, or nil.
func (f *Files) Certificate() *tls.Certificate { return f.cert.Load() }

// Serving reports whether that certificate is valid now.
func (f *Files) Serving() bool {
	c := f.cert.Load()
	now := time.Now()
	return c != nil && c.Leaf != nil && !now.Before(c.Leaf.NotBefore) && now.Before(c.Leaf.NotAfter)
}
